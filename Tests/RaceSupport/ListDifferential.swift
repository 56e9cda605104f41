import Foundation
import GatehouseTestSupport
import Gatehouse
import PolicyCompiler
import Identity
import PolicyEngine

/// The store's resource list against `decide` by token, on any store: for each policy, random users (tiers, app roles,
/// PIN sessions), random resources of every shared type (owners, member roles, usage counters, some owners without
/// their own membership row), and every action, an id is in `GatehouseService.resources` exactly when
/// `decide(token:action:resource:)` allows it. The SQLite and PostgreSQL suites run the same function.
public struct ListDifferential: Sendable {
    public let gate: GatehouseService
    public let clock: RaceClock
    /// Every page of a list (token, type, action); nil: the facade's `resources`, 7 ids a page.
    public let lister: (@Sendable (String, String, String) async throws -> [String])?

    public init(gate: GatehouseService, clock: RaceClock, lister: (@Sendable (String, String, String) async throws -> [String])? = nil) {
        self.gate = gate
        self.clock = clock
        self.lister = lister
    }

    /// What a run compared.
    public struct Report: Sendable, CustomStringConvertible {
        /// (user, resource, action) triples compared.
        public var cases = 0
        /// Lists asked for (one per user, type and action), and how many the store refused as `not_listable`.
        public var lists = 0
        public var notListable = 0
        /// Lists whose plan the store answered from the user's memberships and owned resources (`IdentityService
        /// .narrowing`) rather than by walking the type, so a run shows both query forms were compared.
        public var narrowed = 0
        /// Cases allowed, so a run that allows nothing shows.
        public var allowed = 0
        public var policies = 0
        public var failures: [String] = []
        public init(policies: Int = 0) { self.policies = policies }
        public var description: String {
            "\(cases) cases (\(allowed) allowed) over \(lists) lists (\(notListable) not listable, \(narrowed) narrowed) and \(policies) policies"
        }
        public mutating func add(_ other: Report) {
            cases += other.cases
            lists += other.lists
            notListable += other.notListable
            narrowed += other.narrowed
            allowed += other.allowed
            policies += other.policies
            failures += other.failures.prefix(max(0, 3 - failures.count))
        }
    }

    /// A user of a run: id and access token.
    public struct User: Sendable {
        public var id: String
        public var token: String
    }

    /// `count` users with PIN sessions (so the engine sees them signed in and verified now).
    public func makeUsers(_ count: Int) async throws -> [User] {
        var users: [User] = []
        for _ in 0..<count {
            let signedIn = try await gate.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            let pin = try await gate.identity.setPIN(accessToken: signedIn.accessToken, pin: "4172")
            users.append(User(id: signedIn.userId, token: pin.accessToken))
        }
        return users
    }

    /// Installs `policy`, gives the users random tiers and app roles, stores `resourcesPerType` random resources of each
    /// shared type, and compares every list with `decide`; removes the resources after.
    /// `run` over the generated sets of `seeds` (`ListPolicyGenerator`, 25 resources a type), stopping at the first
    /// set that disagrees; with the sets that did not compile, and the YAML of the one that disagreed.
    public func runGenerated(seeds: Range<UInt64>, users: [User]) async throws -> (report: Report, skipped: Int, failing: String?) {
        var report = Report()
        var skipped = 0
        for seed in seeds {
            var generator = ListPolicyGenerator(seed: seed)
            let yaml = generator.yaml()
            guard let policy = PolicyCompiler.compile(name: "generated", files: [PolicyFileInput(path: "g.yaml", bytes: Array(yaml.utf8))]).policy else {
                skipped += 1
                continue
            }
            report.add(try await run(policy, users: users, resourcesPerType: 25, seed: seed))
            if !report.failures.isEmpty { return (report, skipped, yaml) }
        }
        return (report, skipped, nil)
    }

    public func run(_ policy: CompiledPolicy, users: [User], resourcesPerType: Int, seed: UInt64) async throws -> Report {
        var rng = SeededRandom(seed: seed)
        gate.install(policy)
        let now = clock.now
        let tiers = policy.tierIDs
        let appRoles = ["admin", "partner", "driver"]
        let plans = users.map { user -> (String, String?, [String]) in
            (user.id, rng.chance(80) ? rng.pick(tiers) : nil, appRoles.filter { _ in rng.chance(30) })
        }
        let expiredTier = rng.chance(50)
        try await gate.identity.store.write { tx in
            for (userId, tier, roles) in plans {
                _ = try await tx.deleteAll(SubscriptionRow.self, ["userId": .text(userId)])
                _ = try await tx.deleteAll(AppRoleRow.self, ["userId": .text(userId)])
                if let tier {
                    let expiry: Date? = expiredTier ? now.addingTimeInterval(-60) : (tier.count % 2 == 0 ? nil : now.addingTimeInterval(86_400))
                    var columns: [String: Any] = ["userId": userId, "tier": tier, "productId": "p", "updatedAt": now.timeIntervalSinceReferenceDate]
                    if let expiry { columns["expiresAt"] = expiry.timeIntervalSinceReferenceDate }
                    try await tx.insert(try Self.row(SubscriptionRow.self, columns))
                }
                for role in roles { try await tx.insert(try Self.row(AppRoleRow.self, ["userId": userId, "role": role])) }
            }
        }
        var report = Report(policies: 1)
        for type in policy.sharedResourceTypes {
            let roles = Array(Set(policy.roleNames(of: type) + ["owner"])).sorted()
            var ids: [String] = []
            var rows: [(ResourceRow, [MembershipRow], [UsageCounterRow])] = []
            for index in 0..<resourcesPerType {
                // Ids that need binding (a quote) and one a generated deny rule names.
                let id = index == 0 ? "proj-9" : index == 1 ? "it's-\(seed)" : "r\(seed % 997)-\(index)-\(rng.below(1000))"
                guard !ids.contains(id) else { continue }
                ids.append(id)
                let owner = rng.pick(users).id
                var members: [MembershipRow] = []
                if rng.chance(60) { members.append(try Self.row(MembershipRow.self, ["resourceId": id, "userId": owner, "role": "owner", "joinedAt": now.timeIntervalSinceReferenceDate])) }
                for user in users where user.id != owner && rng.chance(40) {
                    members.append(try Self.row(MembershipRow.self, ["resourceId": id, "userId": user.id, "role": rng.pick(roles), "joinedAt": now.timeIntervalSinceReferenceDate]))
                }
                var usage: [UsageCounterRow] = []
                for counter in policy.limitCounters + ["items", "pages"] where rng.chance(60) {
                    if !usage.contains(where: { $0.name == counter }) { usage.append(try Self.row(UsageCounterRow.self, ["resourceId": id, "name": counter, "value": rng.below(14)])) }
                }
                rows.append((try Self.row(ResourceRow.self, ["id": id, "type": type, "name": "R", "ownerId": owner, "createdAt": now.timeIntervalSinceReferenceDate]), members, usage))
            }
            let stored = rows
            try await gate.identity.store.write { tx in
                for (resource, members, usage) in stored {
                    try await tx.insert(resource)
                    for m in members { try await tx.insert(m) }
                    for u in usage { try await tx.insert(u) }
                }
            }
            for action in policy.actionNames(of: type) {
                for user in users {
                    report.lists += 1
                    var listed: Set<String>
                    do {
                        listed = Set(try await listAll(token: user.token, type: type, action: action))
                    } catch let error as IdentityError where error.code == .notListable {
                        report.notListable += 1
                        continue
                    } catch {
                        let plan = try await gate.plan(bearer: user.token, action: action, resourceType: type)
                        let query = try? IdentityService.listQuery(type: type, plan: plan, after: nil, limit: 7, placeholders: .questionMarks)
                        throw RaceSetupError("seed \(seed), \(type).\(action): \(error); plan \(plan.text); SQL \(query?.sql ?? "-") \(query?.bindings.count ?? -1)")
                    }
                    if case .conditional(let expression) = try await gate.plan(bearer: user.token, action: action, resourceType: type),
                        let sources = IdentityService.narrowing(expression), !sources.isEmpty
                    {
                        report.narrowed += 1
                    }
                    for id in ids {
                        let allowed = try await gate.decide(token: user.token, action: action, resource: Resource(type: type, id: id)).isAllowed
                        report.cases += 1
                        if allowed { report.allowed += 1 }
                        if allowed != listed.contains(id), report.failures.count < 3 {
                            let plan = try await gate.plan(bearer: user.token, action: action, resourceType: type)
                            report.failures.append(
                                "seed \(seed), \(type).\(action), resource \(id): decide \(allowed ? "allows" : "denies"), the list \(listed.contains(id) ? "has" : "lacks") it; plan \(plan.text)")
                        }
                        listed.remove(id)
                    }
                    if !listed.isEmpty, report.failures.count < 3 { report.failures.append("seed \(seed): listed ids not stored: \(listed.sorted())") }
                }
            }
            try await gate.identity.store.write { tx in
                _ = try await tx.deleteAll(ResourceRow.self, ["type": .text(type)])
            }
        }
        return report
    }

    /// A stored row from its columns (the rows' memberwise initialisers are the identity layer's own).
    package static func row<R: StoredRow>(_ type: R.Type, _ columns: [String: Any]) throws -> R {
        try JSONDecoder().decode(R.self, from: JSONSerialization.data(withJSONObject: columns))
    }

    /// Every page of a list, with a small random limit so that cursors are used.
    func listAll(token: String, type: String, action: String) async throws -> [String] {
        if let lister { return try await lister(token, type, action) }
        var ids: [String] = []
        var cursor: String?
        for _ in 0..<10_000 {
            let page = try await gate.resources(token: token, type: type, action: action, cursor: cursor, limit: 7)
            ids += page.ids
            guard let next = page.nextCursor else { return ids }
            cursor = next
        }
        throw RaceSetupError("a list did not end")
    }
}

extension CompiledPolicy {
    /// The member roles `type` declares.
    public func roleNames(of type: String) -> [String] { resourceTypes[type]?.roleNames ?? [] }
    /// The usage counters the policy's limits count.
    public var limitCounters: [String] { Array(Set(resourceTypes.values.flatMap { $0.actions.values.compactMap { $0.limit?.counter } })).sorted() }
}

/// Random policy sets over what the store holds (owners, member roles, member counts, usage counters) and what it does
/// not (resource attributes, absent on every stored resource), with the subject and clock parts the engine folds in:
/// tiers, app roles, sign-in, limits, allow and deny rules with `&&`, `||` and `!`.
public struct ListPolicyGenerator: Sendable {
    var rng: SeededRandom
    public init(seed: UInt64) { rng = SeededRandom(seed: seed) }

    public mutating func yaml() -> String {
        let tiers = ["free", "plus", "pro"].prefix(1 + rng.below(3))
        var out = "tiers:\n"
        for (i, tier) in tiers.enumerated() { out += "  \(tier): {name: \(tier.capitalized)\(i == 0 ? ", default: true" : "")}\n" }
        out += "limits:\n"
        out += "  items: {name: items, counter: items, tiers: {\(tiers.map { "\($0): \(rng.pick([0, 1, 3, 8, 20]))" }.joined(separator: ", "))}}\n"
        out += "appRoles: [admin, partner]\n"
        out += "attributes:\n  resource:\n    region: string\n    archived: bool\n"
        out += "resources:\n"
        var actionsByType: [(String, [String])] = []
        for type in ["doc", "board"].prefix(1 + rng.below(2)) {
            let ownerRole = rng.chance(50)
            let actions = ["view", "edit", "delete", "share"].prefix(2 + rng.below(3)).map { $0 }
            actionsByType.append((type, actions))
            out += "  \(type):\n    owner: ownerId\n"
            if ownerRole { out += "    ownerRole: owner\n" }
            if rng.chance(40) { out += "    memberActions: [view]\n" }
            out += "    roles:\n"
            if ownerRole { out += "      owner: {}\n" }
            out += "      viewer: {grants: [view]}\n"
            out += "      editor: {inherits: [viewer], grants: [\(actions.dropFirst().prefix(1 + rng.below(2)).joined(separator: ", "))]}\n"
            out += "    actions:\n"
            for action in actions {
                var needs: [String] = []
                if rng.chance(25) { needs.append("limit: items") }
                if rng.chance(15) { needs.append("signIn: true") }
                if rng.chance(10) { needs.append("appRoles: [admin]") }
                out += "      \(action): {\(needs.joined(separator: ", "))}\n"
            }
        }
        let ruleCount = rng.below(4)
        if ruleCount > 0 { out += "rules:\n" }
        for index in 0..<ruleCount {
            let (type, actions) = rng.pick(actionsByType)
            let effect = rng.chance(50) ? "deny" : "allow"
            out += "  - name: rule-\(index + 1)\n    effect: \(effect)\n    resources: [\(type)]\n"
            out += "    actions: [\(actions.filter { _ in rng.chance(50) }.ifEmpty(actions[0]).joined(separator: ", "))]\n"
            var when = condition(depth: 2)
            if effect == "deny", rng.chance(60) { when = "(\(when)) && \(rng.pick(["resource.usage.items >= 3", "resource.id == 'proj-9'", "subject.tier == 'free'"]))" }
            out += "    when: \"\(when.replacingOccurrences(of: "\"", with: "\\\""))\"\n"
        }
        return out
    }

    mutating func condition(depth: Int) -> String {
        if depth == 0 || rng.chance(35) { return atom() }
        switch rng.below(5) {
        case 0: return "!(\(condition(depth: depth - 1)))"
        case 1, 2: return "(\(condition(depth: depth - 1)) && \(condition(depth: depth - 1)))"
        default: return "(\(condition(depth: depth - 1)) || \(condition(depth: depth - 1)))"
        }
    }

    mutating func atom() -> String {
        rng.pick([
            "subject.signedIn", "subject.tier == 'pro'", "'admin' in subject.roles", "subject.id == resource.ownerId",
            "resource.ownerId != subject.id", "resource.usage.items >= \(rng.pick([0, 1, 3, 10]))", "has(resource.usage.items)",
            "resource.usage.pages < \(rng.pick([1, 5, 12]))", "size(resource.members) > \(rng.below(3))", "subject.id in resource.members",
            "resource.members[subject.id] == '\(rng.pick(["viewer", "editor", "owner"]))'", "resource.attributes.region == 'eu'",
            "has(resource.attributes.region)", "resource.attributes.archived == false", "resource.attributes.region.startsWith('e')",
            "!has(resource.attributes.archived)", "resource.id == 'proj-9'", "has(resource.id)", "context.now < timestamp('2030-01-01T00:00:00Z')",
        ])
    }
}

extension Array {
    func ifEmpty(_ element: Element) -> [Element] { isEmpty ? [element] : self }
}
