import Foundation
import Gatehouse
import GatehouseRaceSupport
import GatehouseTestSupport
import PolicyCompiler
import PolicyEngine
import Testing

/// `GatehouseService.resources` on SQLite: the store's one-query list against `decide` by token, paging by an opaque
/// cursor bound to its list, and the refusals (token, type, action, cursor, limit).
@Suite struct ResourceListTests {
    /// How many random sets the default run compares; GATEHOUSE_LONG_TESTS=1 for ten times as many.
    static let long = ProcessInfo.processInfo.environment["GATEHOUSE_LONG_TESTS"] == "1"

    static func world(_ set: String = "research-crawler") throws -> ListDifferential {
        let clock = RaceClock()
        let f = try Facade(policySet: set)
        let identity = IdentityService(
            store: SQLiteStore(f.database), configuration: f.identity.configuration,
            jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { clock.now })
        return ListDifferential(gate: GatehouseService(policy: f.gate.policy, identity: identity), clock: clock)
    }

    /// mimisupply declares no shared type: its store holds nothing to list (`invalid_input` on `type`, ResourceRouteTests).
    @Test(arguments: ["research-crawler", "contacasal"])
    func theShippedSetsListWhatDecideAllows(_ set: String) async throws {
        let world = try Self.world(set)
        let users = try await world.makeUsers(6)
        var report = ListDifferential.Report()
        for seed in 0..<UInt64(Self.long ? 20 : 3) {
            report.add(try await world.run(world.gate.policy, users: users, resourcesPerType: 30, seed: 1_000 + seed))
        }
        print("store list vs decide on SQLite, policies/\(set): \(report)")
        #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
        #expect(report.notListable == 0)
        #expect(report.allowed > 0 && report.allowed < report.cases)
    }

    @Test func generatedSetsListWhatDecideAllows() async throws {
        let world = try Self.world()
        let users = try await world.makeUsers(6)
        var report = ListDifferential.Report()
        var skipped = 0
        for seed in 0..<UInt64(Self.long ? 400 : 40) {
            var generator = ListPolicyGenerator(seed: 77_000 + seed)
            let yaml = generator.yaml()
            guard let policy = PolicyCompiler.compile(name: "generated", files: [PolicyFileInput(path: "g.yaml", bytes: Array(yaml.utf8))]).policy else {
                skipped += 1
                continue
            }
            report.add(try await world.run(policy, users: users, resourcesPerType: 25, seed: 77_000 + seed))
            if !report.failures.isEmpty {
                Issue.record("policy:\n\(yaml)")
                break
            }
        }
        print("store list vs decide on SQLite, generated sets: \(report); \(skipped) sets did not compile")
        #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
        #expect(report.policies >= 30)
        #expect(report.allowed > 0 && report.allowed < report.cases)
    }
}
