import Foundation
import GRDB
import Gatehouse
import GatehouseRaceSupport
import GatehouseTestSupport
import PolicyCompiler
@testable import PolicyEngine
import Testing

/// `GatehouseService.resources` on SQLite: the store's one-query list against `decide` by token, paging by an opaque
/// cursor bound to its list, and the refusals (token, type, action, cursor, limit).
@Suite struct ResourceListTests {
    /// How many random sets the default run compares; GATEHOUSE_LONG_TESTS=1 for ten times as many.
    static let long = ProcessInfo.processInfo.environment["GATEHOUSE_LONG_TESTS"] == "1"

    static func world(_ set: String = "research-crawler") throws -> ListDifferential { try worldAndDatabase(set).world }

    /// The differential's world on a fresh SQLite database, on a clock the world moves, with that database (for the
    /// tests and the benchmark that read it directly).
    static func worldAndDatabase(_ set: String = "research-crawler") throws -> (world: ListDifferential, database: AppDatabase) {
        let clock = RaceClock()
        let f = try Facade(policySet: set)
        let identity = IdentityService(
            store: SQLiteStore(f.database), configuration: f.identity.configuration,
            jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { clock.now })
        return (ListDifferential(gate: GatehouseService(policy: f.gate.policy, identity: identity), clock: clock), f.database)
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
        #expect(report.narrowed > 0, "no list took the query from the user's memberships and owned resources")
    }

    /// Which plans the store answers from the user's own rows: an `or` only when every part narrows (owner, member
    /// role), an `and` by its narrowest part, and nothing under `not`, usage or residual conditions.
    @Test func narrowingStartsFromTheUsersRowsOnlyWhereThePlanIsConfinedToThem() {
        let owner = PlanExpression.ownerIsSubject(subject: "u1", field: OwnerFieldName(.ownerId))
        let editor = PlanExpression.memberRole(subject: "u1", roles: ["editor", "owner"])
        let viewer = PlanExpression.memberRole(subject: "u1", roles: ["viewer"])
        let usage = PlanExpression.usageBelow(counter: "items", limit: 3)
        #expect(IdentityService.narrowing(.or([owner, editor])) == [.owner(user: "u1"), .member(user: "u1", roles: ["editor", "owner"])])
        #expect(IdentityService.narrowing(.or([editor, viewer])) == [.member(user: "u1", roles: ["editor", "owner", "viewer"])])
        #expect(IdentityService.narrowing(.or([editor, .memberRole(subject: "u1", roles: nil)])) == [.member(user: "u1", roles: nil)])
        #expect(IdentityService.narrowing(.and([usage, .or([owner, editor])])) == [.owner(user: "u1"), .member(user: "u1", roles: ["editor", "owner"])])
        #expect(IdentityService.narrowing(.and([.or([owner, editor]), viewer])) == [.member(user: "u1", roles: ["viewer"])])
        #expect(IdentityService.narrowing(.or([owner, usage])) == nil)
        #expect(IdentityService.narrowing(.not(editor)) == nil)
        #expect(IdentityService.narrowing(.and([usage])) == nil)
        #expect(IdentityService.narrowing(.memberRole(subject: "u1", roles: [])) == [])
        // An owner named by an attribute has no index to start from.
        #expect(IdentityService.narrowing(.ownerIsSubject(subject: "u1", field: OwnerFieldName(.attribute("lead")))) == nil)
    }

    /// The shipped sets' list of projects starts from the user's memberships of the type through `membership(userId,
    /// resourceType, resourceId, ...)` (v22) and its owned resources through `resource(ownerId)`: SQLite walks no
    /// resource of the type.
    @Test func theNarrowedListUsesTheIndexesOnSQLite() async throws {
        let (world, database) = try Self.worldAndDatabase()
        let gate = world.gate
        let me = try await world.makeUsers(1)[0]
        let plan = try await gate.plan(bearer: me.token, action: "view", resourceType: "project")
        for after in [nil, "p1"] as [String?] {
            let query = try IdentityService.listQuery(type: "project", plan: plan, after: after, limit: 100, placeholders: .questionMarks)
            let details = try await database.pool.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: StatementArguments(query.bindings)).map { $0["detail"] as String }
            }
            #expect(details.contains { $0.contains("membership_userId_resourceType") }, "plan \(plan.text): \(details)")
            // `resource(ownerId, id)`: the owned rows come in id order, a page at a time, not all sorted for every page.
            #expect(details.contains { $0.contains("resource_ownerId_id") }, "plan \(plan.text): \(details)")
            #expect(!details.contains { $0.hasPrefix("SCAN resource") || $0.contains("sqlite_autoindex_resource_1 (id>?)") }, "\(details)")
        }
    }

    @Test func generatedSetsListWhatDecideAllows() async throws {
        let world = try Self.world()
        let users = try await world.makeUsers(6)
        let (report, skipped, failing) = try await world.runGenerated(seeds: 77_000..<(77_000 + UInt64(Self.long ? 400 : 40)), users: users)
        if let failing { Issue.record("policy:\n\(failing)") }
        print("store list vs decide on SQLite, generated sets: \(report); \(skipped) sets did not compile")
        #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
        #expect(report.policies >= 30)
        #expect(report.allowed > 0 && report.allowed < report.cases)
    }
}
