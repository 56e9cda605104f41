import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
import GatehouseTestSupport

/// What the differential tests compare: everything a decision says except where it points.
struct Observed: Equatable, CustomStringConvertible {
    var effect: Effect
    var reason: Reason
    var message: String?
    var limit: Int?
    var used: Int?
    var remaining: Int?
    var upgradeTo: String?

    init(_ d: Decision) {
        (effect, reason, message, limit, used, remaining, upgradeTo) = (d.effect, d.reason, d.message, d.limit, d.used, d.remaining, d.upgradeTo)
    }

    var description: String {
        func show(_ v: Int?) -> String { v.map(String.init) ?? "-" }
        return "\(effect.rawValue)/\(reason.rawValue) limit=\(show(limit)) used=\(show(used)) remaining=\(show(remaining)) "
            + "upgradeTo=\(upgradeTo ?? "-") message=\(message.map { "\"\($0)\"" } ?? "-")"
    }
}

/// Compares the compiled engine, with and without its rule index, against the reference decider, and
/// keeps the tallies that show the generators reached every reason.
struct DifferentialRun {
    var compared = 0
    var reasons: [Reason: Int] = [:]
    var failures: [String] = []

    /// Compares one request; returns false (and records why) on the first disagreement.
    mutating func compare(_ request: Request, policy: CompiledPolicy, reference: ReferenceDecider, context: @autoclosure () -> String) -> Bool {
        compared += 1
        let expected = Observed(reference.decide(request))
        let indexed = policy.decide(request)
        let unindexed = policy.decideUnindexed(request)
        reasons[indexed.reason, default: 0] += 1
        var problems: [String] = []
        if Observed(indexed) != expected { problems.append("decide:    \(Observed(indexed))\nreference: \(expected)") }
        if Observed(unindexed) != Observed(indexed) { problems.append("decideUnindexed: \(Observed(unindexed))\ndecide:          \(Observed(indexed))") }
        // The interned path must give the very same decision, location included.
        let interned = policy.decide(policy.vocabulary.intern(request))
        if interned != indexed { problems.append("decide(interned): \(Observed(interned))\ndecide:           \(Observed(indexed))") }
        if indexed.effect == .deny, indexed.message?.isEmpty ?? true { problems.append("a deny without a message: \(Observed(indexed))") }
        if compared % 16 == 0, policy.explain(request).decision != indexed { problems.append("explain disagrees with decide") }
        guard problems.isEmpty else {
            failures.append("\(context())\nrequest: \(request.json.rendered())\n" + problems.joined(separator: "\n"))
            return false
        }
        return true
    }
}

@Suite(.computeBound) struct PolicySetDifferentialTests {
    static let root = Repository.root

    static func shippedFiles(_ set: String) throws -> [PolicyFileInput] {
        let folder = root.appendingPathComponent("policies/\(set)").path
        return try PolicyCompiler.policyFiles(in: folder).map { path in
            PolicyFileInput(path: path, bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        }
    }

    @Test(arguments: ["research-crawler", "mimisupply", "contacasal"])
    func shippedSetAgreesWithTheReference(_ set: String) throws {
        let files = try Self.shippedFiles(set)
        let policy = try #require(PolicyCompiler.compile(name: set, files: files).policy)
        let model = PolicySetReader.read(files)
        let reference = ReferenceDecider(model)
        let seed = TestScale.seed(20_261_122)
        var requests = RequestGenerator(rng: Rng(state: seed), model: model)
        var run = DifferentialRun()
        for index in 0..<TestScale.count(40_000) {
            let request = requests.make()
            if !run.compare(request, policy: policy, reference: reference, context: "policies/\(set), seed \(seed), request #\(index)") { break }
        }
        #expect(run.failures.isEmpty, "\(run.failures.joined(separator: "\n\n"))")
        // The requests must reach the set's interesting outcomes, or agreeing proves little.
        let expected: [String: [Reason]] = [
            "research-crawler": [.allowed, .defaultDeny, .unauthenticated, .notMember, .accessDenied, .ownerOnly, .requiresUpgrade, .limitExceeded, .consentRequired],
            "mimisupply": [.allowed, .defaultDeny, .unauthenticated, .roleRequired],
            "contacasal": [.allowed, .defaultDeny, .unauthenticated, .stepUpRequired, .notMember, .ownerOnly],
        ]
        for reason in expected[set] ?? [] { #expect(run.reasons[reason, default: 0] >= 50, "\(reason) reached \(run.reasons[reason, default: 0]) times") }
    }

    /// Generated sets, each written as YAML in a random shape, compiled, read back, and decided by both sides.
    @Test func generatedSetsAgreeWithTheReference() throws {
        let base = TestScale.seed(7_000_001)
        let only = ProcessInfo.processInfo.environment["GATEHOUSE_POLICY_SEED"].flatMap(UInt64.init)
        let seeds = only.map { [$0] } ?? (0..<UInt64(TestScale.count(150))).map { base &+ $0 &* 0x9E37_79B9 }
        var run = DifferentialRun()
        var rulesGenerated = 0, withConditions = 0
        for (number, seed) in seeds.enumerated() {
            var generator = PolicySetGenerator(rng: Rng(state: seed))
            let model = generator.make()
            var renderer = PolicySetRenderer(rng: Rng(state: seed ^ 0xA5A5))
            let files = renderer.files(model, layout: seed % 3 == 0 ? .single : .split)
            let result = PolicyCompiler.compile(name: "generated", files: files)
            guard let policy = result.policy else {
                Issue.record("generated set (GATEHOUSE_POLICY_SEED=\(seed)) does not compile:\n\(result.diagnostics.map { "\($0.location?.description ?? "-"): \($0.code): \($0.message)" }.joined(separator: "\n"))\n\(Self.show(files))")
                continue
            }
            if let folder = ProcessInfo.processInfo.environment["GATEHOUSE_WRITE_FUZZ_SEEDS"], number % 10 == 0 {
                // Seeds for scripts/fuzz.sh policy-compile: the set's files joined at `#@file` lines.
                let joined = files.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: "\n#@file\n")
                try joined.write(toFile: "\(folder)/generated-\(seed).yaml", atomically: true, encoding: .utf8)
            }
            let readBack = PolicySetReader.read(files)
            #expect(readBack == model, "GATEHOUSE_POLICY_SEED=\(seed): the YAML does not read back as the model\n\(readBack.differences(from: model))\n\(Self.show(files))")
            rulesGenerated += model.rules.count
            withConditions += model.rules.filter { $0.when != nil }.count
            let reference = ReferenceDecider(model)
            var requests = RequestGenerator(rng: Rng(state: seed &+ 1), model: model)
            for index in 0..<1_000 {  // the long run adds sets, not requests per set
                let request = requests.make()
                if !run.compare(request, policy: policy, reference: reference, context: "GATEHOUSE_POLICY_SEED=\(seed), request #\(index)\n\(Self.show(files))") {
                    break
                }
            }
            if run.failures.count >= 3 { break }
        }
        #expect(run.failures.isEmpty, "\(run.failures.joined(separator: "\n\n"))")
        print("generated sets: \(seeds.count), rules: \(rulesGenerated) (\(withConditions) with conditions), requests compared: \(run.compared)")
        print("reasons: \(run.reasons.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " "))")
        if only == nil {
            for reason in Reason.allCases { #expect(run.reasons[reason, default: 0] >= 50, "\(reason) reached \(run.reasons[reason, default: 0]) times") }
        }
    }

    static func show(_ files: [PolicyFileInput]) -> String {
        files.map { "--- \($0.path)\n\(String(decoding: $0.bytes, as: UTF8.self))" }.joined(separator: "\n")
    }
}
