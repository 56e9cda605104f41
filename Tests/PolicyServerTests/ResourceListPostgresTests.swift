import Foundation
import Gatehouse
import GatehouseRaceSupport
import PolicyCompiler
import PolicyServer
import Testing
import GatehouseTestSupport

/// `GatehouseService.resources` on PostgreSQL (`$n` placeholders, postgres-nio binds): the store's list against
/// `decide` by token for the shipped sets and generated ones, and pagination while resources are inserted.
@Suite(.startsServers) struct ResourceListPostgresTests {
    static let long = ProcessInfo.processInfo.environment["GATEHOUSE_LONG_TESTS"] == "1"

    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable })
    func theListIsWhatDecideAllows() async throws {
        let clock = RaceClock(Date())
        try await FactNotificationTests.withReplicas(clock: clock) { replicas, _ in
            let world = ListDifferential(gate: replicas[0].gate, clock: clock)
            let users = try await world.makeUsers(6)
            var report = ListDifferential.Report()
            for set in ["research-crawler", "contacasal"] {
                let policy = try #require(PolicyCompiler.load(directory: TestServer.root.appendingPathComponent("policies/\(set)").path).policy)
                for seed in 0..<UInt64(Self.long ? 10 : 2) { report.add(try await world.run(policy, users: users, resourcesPerType: 30, seed: 2_000 + seed)) }
            }
            let (generated, skipped, failing) = try await world.runGenerated(seeds: 77_000..<(77_000 + UInt64(Self.long ? 200 : 25)), users: users)
            report.add(generated)
            if let failing { Issue.record("policy:\n\(failing)") }
            print("store list vs decide on PostgreSQL: \(report); \(skipped) generated sets did not compile")
            #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
            #expect(report.notListable == 0)
            #expect(report.allowed > 0 && report.allowed < report.cases)
        }
    }

    /// A page is one statement: one round trip to PostgreSQL, no `BEGIN` and `COMMIT` around it (`readOne`).
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable })
    func aPageIsOneRoundTrip() async throws {
        let clock = RaceClock(Date())
        try await FactNotificationTests.withReplicas(clock: clock) { replicas, _ in
            let (store, gate) = (replicas[0].store, replicas[0].gate)
            let token = try await ListDifferential(gate: gate, clock: clock).makeUsers(1)[0].token
            for _ in 0..<3 { _ = try await gate.createSpace(accessToken: token, name: "P", type: "project", inviteRole: "editor") }
            let plan = try await gate.plan(bearer: token, action: "view", resourceType: "project")
            let before = store.roundTrips.value
            let page = try await gate.identity.resourceIds(type: "project", plan: plan, after: nil, limit: 2)
            #expect(store.roundTrips.value - before == 1)
            #expect(page.ids.count == 2 && page.hasMore)
        }
    }

    /// Pages of 5 through the facade while another task creates projects the user owns, on PostgreSQL.
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable })
    func pagesListEveryEarlierIdOnceWhileInsertsRun() async throws {
        let clock = RaceClock(Date())
        try await FactNotificationTests.withReplicas(clock: clock) { replicas, _ in
            let gate = replicas[0].gate
            let token = try await ListDifferential(gate: gate, clock: clock).makeUsers(1)[0].token
            var before: [String] = []
            for _ in 0..<40 { before.append(try await gate.createSpace(accessToken: token, name: "P", type: "project", inviteRole: "editor").resourceId) }
            let inserting = Task {
                var added: [String] = []
                for _ in 0..<40 { added.append(try await gate.createSpace(accessToken: token, name: "Q", type: "project", inviteRole: "editor").resourceId) }
                return added
            }
            var listed: [String] = []
            var cursor: String?
            for _ in 0..<1_000 {
                let page = try await gate.resources(token: token, type: "project", action: "view", cursor: cursor, limit: 5)
                listed += page.ids
                guard let next = page.nextCursor else { break }
                cursor = next
            }
            let added = try await inserting.value
            #expect(Set(listed).count == listed.count, "an id listed twice")
            let counts = Dictionary(listed.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(before.allSatisfy { counts[$0] == 1 }, "an id stored before the first page was skipped")
            #expect(Set(listed).isSubset(of: Set(before + added)))
        }
    }
}
