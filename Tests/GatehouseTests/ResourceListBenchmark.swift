import Foundation
import GRDB
import Gatehouse
import GatehouseRaceSupport
import PolicyEngine
import Testing
import GatehouseTestSupport

/// Not a timed test: with GATEHOUSE_LIST_BENCH=1 it prints how long listing 10,000 memberships through the facade's
/// `resources` takes next to a plain SELECT of the same ids (SQLite), and `plan` next to `decide` (docs/plans.md).
/// Nothing is asserted about time.
@Suite(.computeBound) struct ResourceListBenchmark {
    static let enabled = ProcessInfo.processInfo.environment["GATEHOUSE_LIST_BENCH"] == "1"

    static func median(_ samples: [Double]) -> Double { samples.sorted()[samples.count / 2] }

    static func milliseconds(_ body: () async throws -> Void) async rethrows -> Double {
        let start = ContinuousClock.now
        try await body()
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    @Test(.enabled(if: enabled)) func listingTenThousandMemberships() async throws {
        let (world, database) = try ResourceListTests.worldAndDatabase()
        let (gate, clock, identity) = (world.gate, world.clock, world.gate.identity)
        let users = try await world.makeUsers(2)
        let (me, other) = (users[0], users[1])
        let now = clock.now.timeIntervalSinceReferenceDate
        // 10,000 projects of another user where `me` is an editor, and 10,000 where it is not a member.
        for chunk in 0..<20 {
            try await identity.store.write { tx in
                for i in (chunk * 1000)..<((chunk + 1) * 1000) {
                    let id = String(format: "p%06d-%@", i, UUID().uuidString)
                    try await tx.insert(try ListDifferential.row(ResourceRow.self, ["id": id, "type": "project", "name": "P", "ownerId": other.id, "createdAt": now]))
                    try await tx.insert(try ListDifferential.row(MembershipRow.self, ["resourceId": id, "userId": other.id, "role": "owner", "joinedAt": now]))
                    if i % 2 == 0 {
                        try await tx.insert(try ListDifferential.row(MembershipRow.self, ["resourceId": id, "userId": me.id, "role": "editor", "joinedAt": now]))
                    }
                }
            }
        }
        func listAll(limit: Int) async throws -> [String] {
            var ids: [String] = []
            var cursor: String?
            repeat {
                let page = try await gate.resources(token: me.token, type: "project", action: "view", cursor: cursor, limit: limit)
                ids += page.ids
                cursor = page.nextCursor
            } while cursor != nil
            return ids
        }
        let pool = database.pool
        let userId = me.id
        func plain() async throws -> [String] {
            try await pool.read { db in
                try String.fetchAll(db, sql: "SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId", arguments: [userId])
            }
        }
        let listed = try await listAll(limit: 1000)
        let selected = try await plain()
        #expect(listed == selected)
        #expect(listed.count == 10_000)
        var facade1000: [Double] = [], facade100: [Double] = [], select: [Double] = []
        for _ in 0..<7 {
            facade1000.append(try await Self.milliseconds { _ = try await listAll(limit: 1000) })
            facade100.append(try await Self.milliseconds { _ = try await listAll(limit: 100) })
            select.append(try await Self.milliseconds { _ = try await plain() })
        }
        let (a, b, c) = (Self.median(facade1000), Self.median(facade100), Self.median(select))
        print(String(format: "list 10,000 of 20,000 projects (debug build, SQLite): resources limit 1000 %.1f ms (%.2fx), limit 100 %.1f ms (%.2fx), plain SELECT %.1f ms", a, a / c, b, b / c, c))

        // The list's own SQL in one query (no pages, no bearer), its query plan, and with a covering index on the resource side.
        let plan = try await gate.plan(bearer: me.token, action: "view", resourceType: "project")
        let query = try IdentityService.listQuery(type: "project", plan: plan, after: nil, limit: 20_000, placeholders: .questionMarks)
        func raw() async throws -> Int {
            try await pool.read { db in try String.fetchAll(db, sql: query.sql, arguments: StatementArguments(query.bindings)).count }
        }
        var rawTimes: [Double] = []
        for _ in 0..<7 { rawTimes.append(try await Self.milliseconds { _ = try await raw() }) }
        print("plan: \(plan.text)")
        print(String(format: "the list's SQL alone, one query: %.1f ms (%.2fx)", Self.median(rawTimes), Self.median(rawTimes) / c))
        let explained = try await pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: StatementArguments(query.bindings)).map { $0["detail"] as String }
        }
        print("EXPLAIN QUERY PLAN: \(explained.joined(separator: "; "))")
        // The same without v22's index on the membership rows' copies (the arm then walks the user's memberships of
        // every type by v13's index and checks each row's copied type), in the same run. The v21 and v20 query shapes
        // are measured beside v22's by scripts/list-sql-instructions.py.
        try await pool.write { db in
            try db.execute(sql: #"DROP INDEX "membership_userId_resourceType""#)
        }
        rawTimes = []
        for _ in 0..<7 { rawTimes.append(try await Self.milliseconds { _ = try await raw() }) }
        var again: [Double] = []
        for _ in 0..<7 { again.append(try await Self.milliseconds { _ = try await listAll(limit: 1000) }) }
        var again100: [Double] = []
        for _ in 0..<7 { again100.append(try await Self.milliseconds { _ = try await listAll(limit: 100) }) }
        var select2: [Double] = []
        for _ in 0..<7 { select2.append(try await Self.milliseconds { _ = try await plain() }) }
        let c2 = Self.median(select2)
        print(String(format: "without v22's membership(userId, resourceType, ...): SQL alone %.1f ms (%.2fx), resources limit 1000 %.1f ms (%.2fx), limit 100 %.1f ms (%.2fx), plain SELECT %.1f ms",
            Self.median(rawTimes), Self.median(rawTimes) / c2, Self.median(again), Self.median(again) / c2, Self.median(again100), Self.median(again100) / c2, c2))

        // What a page costs besides its query: the bearer's facts and the plan (`plan(bearer:)`), and one page of 100
        // through the facade, each over 100 calls.
        let perPage = try await Self.milliseconds {
            for _ in 0..<100 { _ = try await gate.plan(bearer: me.token, action: "view", resourceType: "project") }
        }
        let firstPage = try await Self.milliseconds {
            for _ in 0..<100 { _ = try await gate.resources(token: me.token, type: "project", action: "view", cursor: nil, limit: 100) }
        }
        let building = try await Self.milliseconds {
            for _ in 0..<100 { _ = try IdentityService.listQuery(type: "project", plan: plan, after: "p0", limit: 100, placeholders: .questionMarks) }
        }
        let storePage = try await Self.milliseconds {
            for _ in 0..<100 { _ = try await identity.resourceIds(type: "project", plan: plan, after: nil, limit: 100) }
        }
        print(String(format: "per page: bearer facts and plan %.3f ms, building the SQL %.3f ms, the store's page of 100 %.3f ms, a first page of 100 through resources %.3f ms",
            perPage / 100, building / 100, storePage / 100, firstPage / 100))

        // plan next to decide, in-process, the same subject (wall time of a debug build: a ratio, not a figure).
        let policy = gate.policy
        let subject = try await gate.subject(token: me.token).subject
        let context = Context(now: clock.now)
        let request = Request(subject: subject, action: "edit", resource: Resource(type: "project", id: "p1", ownerId: other.id, members: [me.id: "editor"]), context: context)
        let n = 20_000
        var sink = 0
        let planMs = try await Self.milliseconds {
            for _ in 0..<n { if case .conditional = policy.plan(subject: subject, action: "edit", resourceType: "project", context: context) { sink += 1 } }
        }
        let decideMs = try await Self.milliseconds {
            for _ in 0..<n { if policy.decide(request).isAllowed { sink += 1 } }
        }
        print(String(format: "plan %.2f µs, decide %.2f µs per call (debug build; %.1fx), %d", planMs * 1000 / Double(n), decideMs * 1000 / Double(n), planMs / decideMs, sink))
    }
}
