import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
import GatehouseTestSupport

/// Properties every policy set must have, checked on generated sets and requests with fixed seeds.
@Suite(.computeBound) struct PolicySetPropertyTests {
    /// A generated set, its compiled engine, and the files it was compiled from.
    struct Sample {
        var seed: UInt64
        var model: PolicySetModel
        var files: [PolicyFileInput]
        var policy: CompiledPolicy
    }

    static func compile(_ model: PolicySetModel, seed: UInt64, layout: PolicySetRenderer.Layout, folder: String = "gen") -> (CompiledPolicy?, [PolicyFileInput], String) {
        var renderer = PolicySetRenderer(rng: Rng(state: seed))
        let files = renderer.files(model, layout: layout, folder: folder)
        let result = PolicyCompiler.compile(name: "generated", files: files)
        let problems = result.diagnostics.map { "\($0.location?.description ?? "-"): \($0.code): \($0.message)" }.joined(separator: "\n")
        return (result.policy, files, problems)
    }

    /// `count` generated sets from `base`, each compiled from a randomly shaped rendering.
    static func samples(_ count: Int, base: UInt64) -> [Sample] {
        let first = TestScale.seed(base)
        return (0..<UInt64(TestScale.count(count))).compactMap { i in
            let seed = first &+ i &* 0x9E37_79B9
            var generator = PolicySetGenerator(rng: Rng(state: seed))
            let model = generator.make()
            let (policy, files, problems) = compile(model, seed: seed ^ 0x5A5A, layout: i % 2 == 0 ? .split : .single)
            guard let policy else {
                Issue.record("generated set (GATEHOUSE_POLICY_SEED=\(seed)) does not compile:\n\(problems)")
                return nil
            }
            return Sample(seed: seed, model: model, files: files, policy: policy)
        }
    }

    static func requests(_ count: Int, for sample: Sample) -> [Request] {
        var generator = RequestGenerator(rng: Rng(state: sample.seed &+ 99), model: sample.model)
        return (0..<count).map { _ in generator.make() }
    }

    /// Two decisions agree on everything but which deny rule spoke (its message and location).
    static func sameOutcome(_ a: Decision, _ b: Decision) -> Bool {
        var x = Observed(a), y = Observed(b)
        if x.reason == .deniedByRule, y.reason == .deniedByRule { x.message = nil; y.message = nil }
        return x == y
    }

    // MARK: Deny by default

    @Test func undeclaredTypesAndActionsAreDeniedByDefaultForEveryone() {
        for sample in Self.samples(40, base: 11) {
            let model = sample.model
            var requests = Self.requests(200, for: sample)
            for index in requests.indices {
                // Make the subject as strong as the set allows: signed in, freshly verified, every app role, the owner.
                requests[index].subject.id = "u1"
                requests[index].subject.auth = Authentication(method: AuthMethod.pin, verifiedAt: RequestGenerator.now)
                requests[index].subject.roles = model.appRoles.map(\.id)
                requests[index].resource.ownerId = "u1"
                requests[index].resource.attributes["createdBy"] = .string("u1")
                if index % 2 == 0 {
                    requests[index].resource.type = ["folder", "", requests[index].resource.type.uppercased(), "\(requests[index].resource.type)s"][index % 4]
                } else if let type = model.type(requests[index].resource.type) {
                    let undeclared = ["archive", "", "*", "VIEW", "view "].filter { type.action($0) == nil }
                    requests[index].action = undeclared[index % undeclared.count]
                }
                let request = requests[index]
                guard model.type(request.resource.type)?.action(request.action) == nil else { continue }
                let decision = sample.policy.decide(request)
                #expect(decision.effect == .deny && decision.reason == .defaultDeny, "GATEHOUSE_POLICY_SEED=\(sample.seed): \(request.json.rendered())")
                #expect(decision.message?.isEmpty == false)
                #expect(sample.policy.decideUnindexed(request) == decision)
            }
        }
    }

    @Test func withoutGrantsOrAllowRulesOnlyOwnersTakeMembershipActions() {
        var checked = 0, ownersAllowed = 0, membersDenied = 0
        for var sample in Self.samples(40, base: 12) {
            for t in sample.model.resources.indices {
                sample.model.resources[t].memberActions = []
                for r in sample.model.resources[t].roles.indices { sample.model.resources[t].roles[r].grants = [] }
            }
            sample.model.rules.removeAll { $0.effect == .allow }
            let (compiled, _, problems) = Self.compile(sample.model, seed: sample.seed, layout: .single)
            guard let policy = compiled else {
                Issue.record("GATEHOUSE_POLICY_SEED=\(sample.seed) without grants does not compile:\n\(problems)")
                continue
            }
            for request in Self.requests(300, for: sample) {
                guard let type = sample.model.type(request.resource.type), type.owner != nil || !type.roles.isEmpty else { continue }
                let decision = policy.decide(request)
                checked += 1
                if [.ownerOnly, .accessDenied].contains(decision.reason) { membersDenied += 1 }
                guard decision.isAllowed else { continue }
                ownersAllowed += 1
                // Allowed: the subject must own the resource, by the owner field or the owner role.
                let id = request.subject.id ?? ""
                let ownerField: String? = type.owner == "ownerId" ? request.resource.ownerId : {
                    if case .string(let s)? = request.resource.attributes["createdBy"] { return s } else { return nil }
                }()
                let owns = !id.isEmpty && (ownerField == id || (type.ownerRole != nil && request.resource.members[id] == type.ownerRole))
                #expect(owns, "GATEHOUSE_POLICY_SEED=\(sample.seed): allowed a non-owner with no grants: \(request.json.rendered())")
            }
        }
        #expect(checked > 2000 && ownersAllowed > 100 && membersDenied > 100, "checked \(checked), owners allowed \(ownersAllowed), members denied \(membersDenied)")
    }

    // MARK: Explicit deny wins

    @Test func anUnconditionalDenyRuleDeniesEveryRequestForItsAction() {
        for sample in Self.samples(40, base: 13) {
            var rng = Rng(state: sample.seed)
            let type = rng.pick(sample.model.resources)
            let action = rng.pick(type.actions).id
            var model = sample.model
            // The deny goes anywhere among the rules, next to an allow rule for the same action that always matches.
            model.rules.insert(PolicySetModel.Rule(name: "deny-it", effect: .deny, resources: [type.id], actions: [action]), at: rng.below(model.rules.count + 1))
            model.rules.insert(PolicySetModel.Rule(name: "allow-it", effect: .allow, resources: [type.id], actions: [action]), at: rng.below(model.rules.count + 1))
            let (compiled, _, problems) = Self.compile(model, seed: sample.seed, layout: rng.chance(50) ? .split : .single)
            guard let policy = compiled else {
                Issue.record("GATEHOUSE_POLICY_SEED=\(sample.seed) with a deny rule does not compile:\n\(problems)")
                continue
            }
            var hits = 0
            for var request in Self.requests(300, for: sample) {
                if rng.chance(50) { (request.resource.type, request.action) = (type.id, action) }
                let decision = policy.decide(request)
                #expect(policy.decideUnindexed(request) == decision)
                if request.resource.type == type.id, request.action == action {
                    hits += 1
                    #expect(decision.effect == .deny && decision.reason == .deniedByRule, "GATEHOUSE_POLICY_SEED=\(sample.seed): \(request.json.rendered())")
                    #expect(decision.message?.isEmpty == false)
                } else {
                    #expect(Self.sameOutcome(decision, sample.policy.decide(request)), "GATEHOUSE_POLICY_SEED=\(sample.seed): a deny rule for \(type.id).\(action) changed \(request.json.rendered())")
                }
            }
            #expect(hits > 100)
        }
    }

    // MARK: Order and duplication

    @Test func theOrderOfRulesAndFilesNeverChangesADecision() {
        for sample in Self.samples(40, base: 14) {
            var rng = Rng(state: sample.seed)
            var shuffled = sample.model
            shuffled.rules = rng.shuffled(shuffled.rules)
            shuffled.resources = rng.shuffled(shuffled.resources)
            shuffled.features = rng.shuffled(shuffled.features)
            shuffled.limits = rng.shuffled(shuffled.limits)
            shuffled.appRoles = rng.shuffled(shuffled.appRoles)
            shuffled.messages = rng.shuffled(shuffled.messages)
            for t in shuffled.resources.indices {
                shuffled.resources[t].actions = rng.shuffled(shuffled.resources[t].actions)
                shuffled.resources[t].roles = rng.shuffled(shuffled.resources[t].roles)
            }
            // Another shape: merged into one file if it was split and split if it was merged, under another folder name.
            let (compiled, _, problems) = Self.compile(shuffled, seed: sample.seed &+ 7, layout: sample.files.count > 1 ? .single : .split, folder: "moved/set")
            guard let policy = compiled else {
                Issue.record("GATEHOUSE_POLICY_SEED=\(sample.seed) reordered does not compile:\n\(problems)")
                continue
            }
            for request in Self.requests(300, for: sample) {
                let before = sample.policy.decide(request), after = policy.decide(request)
                #expect(Self.sameOutcome(before, after), "GATEHOUSE_POLICY_SEED=\(sample.seed): \(request.json.rendered())\nbefore: \(Observed(before))\nafter:  \(Observed(after))")
            }
        }
    }

    @Test func duplicatingARuleNeverChangesADecision() {
        for sample in Self.samples(40, base: 15) where !sample.model.rules.isEmpty {
            var rng = Rng(state: sample.seed)
            var model = sample.model
            for n in 0..<(1 + rng.below(3)) {
                var copy = rng.pick(model.rules)
                // The same rule again; a name may be declared once, so a named copy gets its own.
                copy.name = copy.name.map { "\($0) (copy \(n + 1))" }
                model.rules.insert(copy, at: rng.below(model.rules.count + 1))
            }
            let (compiled, _, problems) = Self.compile(model, seed: sample.seed, layout: rng.chance(50) ? .split : .single)
            guard let policy = compiled else {
                Issue.record("GATEHOUSE_POLICY_SEED=\(sample.seed) with duplicated rules does not compile:\n\(problems)")
                continue
            }
            for request in Self.requests(300, for: sample) {
                #expect(Self.sameOutcome(sample.policy.decide(request), policy.decide(request)), "GATEHOUSE_POLICY_SEED=\(sample.seed): \(request.json.rendered())")
            }
        }
    }

    // MARK: Content hash

    @Test func theContentHashFollowsTheBytesAndNames() throws {
        for sample in Self.samples(20, base: 16) {
            var rng = Rng(state: sample.seed)
            let hash = sample.policy.contentHash
            #expect(hash.count == 64)
            // The same files again, in another order: the same hash.
            let again = PolicyCompiler.compile(name: "other-name", files: rng.shuffled(sample.files)).policy
            #expect(again?.contentHash == hash)

            // The same files read back from disk, from a folder elsewhere: still the same hash.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-hash-\(sample.seed)-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            for file in sample.files {
                let url = folder.appendingPathComponent(String(file.path.dropFirst("gen/".count)))
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(file.bytes).write(to: url)
            }
            #expect(PolicyCompiler.load(directory: folder.path).policy?.contentHash == hash, "GATEHOUSE_POLICY_SEED=\(sample.seed)")

            // One more byte anywhere, or a renamed file: another hash.
            var changed = sample.files
            let index = rng.below(changed.count)
            changed[index].bytes += Array(rng.pick(["\n", " ", "\n# note\n"]).utf8)
            let changedHash = try #require(PolicyCompiler.compile(name: "generated", files: changed).policy).contentHash
            #expect(changedHash != hash)
            var renamed = sample.files
            renamed[index].path = renamed[index].path.replacingOccurrences(of: ".yaml", with: "-renamed.yaml")
            let renamedHash = try #require(PolicyCompiler.compile(name: "generated", files: renamed).policy).contentHash
            #expect(renamedHash != hash && renamedHash != changedHash)
        }
    }
}
