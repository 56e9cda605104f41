import Foundation
import GRDB
import Logging
import PostgresNIO
@testable import PolicyEngine
import PolicyModel
import Testing
import GatehouseTestSupport

@testable import Identity
@testable import IdentityPostgres

@Suite(.storeScope, .startsServers) struct StoreTests {
    @Test func theSQLiteDatabaseIsConfiguredForSecurityData() async throws {
        let h = try await Harness(.sqlite)
        let (journal, sync, fk) = try await h.database.pool.write { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode")!, try Int.fetchOne(db, sql: "PRAGMA synchronous")!, try Int.fetchOne(db, sql: "PRAGMA foreign_keys")!)
        }
        #expect(journal == "wal" && sync == 2 && fk == 1)  // 2 = FULL
        #expect(h.database.pool.configuration.publicStatementArguments == false)
        #expect(try h.database.integrityProblems().isEmpty)
    }

    @Test(arguments: StoreKind.testable) func everyMigrationIsAppliedOnceAndReopeningKeepsTheData(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.service.signInAnonymously(source: .inProcess)
        switch store {
        case .sqlite:
            let applied = try await h.database.pool.read { db in try AppDatabase.migrator.appliedIdentifiers(db) }
            #expect(applied == Set(Schema.migrations.map(\.0)))
            let reopened = try AppDatabase(path: h.dir.appendingPathComponent("identity.sqlite").path)
            #expect(try await reopened.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM user") } == 1)
        case .postgres:
            // The same names in the same order as SQLite's.
            #expect(PostgresSchema.names == Schema.migrations.map(\.0))
            #expect(try await h.postgres!.appliedMigrations() == Schema.migrations.map(\.0))
            let reopened = try await TestPostgres.makeStore(schema: h.postgres!.configuration.schema!, create: false)
            #expect(try await reopened.read { tx in try await tx.fetchAll(UserRow.self, [:]).count } == 1)
            #expect(try await reopened.appliedMigrations().count == Schema.migrations.count)
        }
    }

    /// Replicas starting together: the advisory lock makes the second wait, then find nothing to do.
    @Test(.enabled(if: TestPostgres.url != nil, "PostgreSQL only; GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func twoPostgresReplicasMigratingOneSchemaAtOnceApplyEachMigrationOnce() async throws {
        let schema = TestPostgres.newSchemaName()
        let a = try await TestPostgres.makeStore(schema: schema, migrate: false)
        let b = try await TestPostgres.makeStore(schema: schema, create: false, migrate: false)
        async let first: Void = a.migrate()
        async let second: Void = b.migrate()
        _ = try await (first, second)
        #expect(try await a.appliedMigrations() == Schema.migrations.map(\.0))
        #expect(try await b.read { tx in try await tx.fetchAll(UserRow.self, [:]).count } == 0)
    }

    @Test(arguments: StoreKind.testable) func theAuditLogIsAppendOnly(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.service.signInAnonymously(source: .inProcess)
        var statements = [#"UPDATE "auditEvent" SET "outcome" = 'failure'"#, #"DELETE FROM "auditEvent""#]
        if store == .postgres { statements.append(#"TRUNCATE "auditEvent""#) }
        for sql in statements {
            await #expect(throws: (any Error).self, "\(sql)") { try await h.execute(sql) }
        }
        #expect(try await h.auditRows().count == 1)
    }

    /// `readOne` runs one read statement; a second one, or a write, fails the read on both stores alike (so a body
    /// that outgrows it fails on SQLite too, not only where it would lose its snapshot), and the write changes nothing.
    @Test(arguments: StoreKind.testable) func aOneStatementReadRefusesASecondStatementAndWrites(store: StoreKind) async throws {
        let h = try await Harness(store)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let found = try await h.service.store.readOne { tx in try await tx.fetchOne(UserRow.self, "id", .text(user.userId))?.id }
        #expect(found == user.userId)
        let twice = await identityError {
            try await h.service.store.readOne { tx in
                _ = try await tx.fetchOne(UserRow.self, "id", .text(user.userId))
                return try await tx.fetchAll(SessionRow.self, "userId", .text(user.userId)).count
            }
        }
        #expect(twice?.code == .storage && twice?.field == "database")
        let sessions = try await h.count("session")
        let write = await identityError {
            try await h.service.store.readOne { tx in try await tx.deleteAll(SessionRow.self, ["userId": .text(user.userId)]) }
        }
        #expect(write?.code == .storage && write?.field == "database")
        #expect(try await h.count("session") == sessions)
        _ = try await h.service.validate(accessToken: user.accessToken)
    }

    @Test(arguments: StoreKind.testable) func aWriteThatFailsMidwayLeavesTheDatabaseAsItWas(store: StoreKind) async throws {
        let h = try await Harness(store)
        let tables = ["user", "privacySettings", "session", "refreshToken", "auditEvent"]
        _ = try await h.service.signInAnonymously(source: .inProcess)
        var before: [Int] = []
        for table in tables { before.append(try await h.count(table)) }
        // The audit insert is the last write of a sign-in: make it fail after the user and session rows went in.
        try await h.injectFailure(before: "INSERT", on: "auditEvent")
        let e = await identityError { try await h.service.signInAnonymously(source: .inProcess) }
        #expect(e?.code == .storage && e?.field == "database")
        var after: [Int] = []
        for table in tables { after.append(try await h.count(table)) }
        #expect(after == before)
        try await h.removeFailure(on: "auditEvent")
        _ = try await h.service.signInAnonymously(source: .inProcess)
        #expect(try await h.count("session") == before[2] + 1)
    }

    @Test(arguments: StoreKind.testable) func aDeletionThatFailsMidwayRevokesNothingAndMovesNothing(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let partner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        _ = try await h.service.joinSpace(accessToken: partner.accessToken, shareCode: space.shareCode, source: .inProcess)
        let audit = try await h.auditRows().count
        try await h.injectFailure(before: "DELETE", on: "user")
        #expect(await identityError { try await h.service.deleteAccount(accessToken: owner.accessToken) }?.code == .storage)
        _ = try await h.service.validate(accessToken: owner.accessToken)  // sessions were not revoked
        #expect(try await h.service.resourceFacts(resourceId: space.resourceId).ownerId == owner.userId)
        #expect(try await h.auditRows().count == audit)
    }

    /// N write transactions that each read a counter and write it back plus one, all at once, end
    /// with exactly N: no lost update (SQLite: one writer; PostgreSQL: SERIALIZABLE and retries).
    @Test(arguments: StoreKind.testable) func concurrentReadModifyWritesLoseNoUpdate(store: StoreKind) async throws {
        let h = try await Harness(store)
        let writes = 40
        let t = h.clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<writes {
                group.addTask {
                    try await h.service.store.write { tx in
                        var row = try await tx.fetchOne(GuessLimitRow.self, "scope", .text("counter")) ?? GuessLimitRow(scope: "counter", windowStart: t, failures: 0)
                        await Task.yield()  // let the others read the same value, if the store allowed it
                        row.failures += 1
                        try await tx.upsert(row)
                    }
                }
            }
            try await group.waitForAll()
        }
        let row = try await h.service.store.read { tx in try await tx.fetchOne(GuessLimitRow.self, "scope", .text("counter")) }
        #expect(row?.failures == writes)
    }

    @Test(arguments: StoreKind.testable) func aReadBodyThatThrowsPassesItsErrorThrough(store: StoreKind) async throws {
        let h = try await Harness(store)
        let e = await identityError {
            try await h.service.store.read { _ -> Int in throw IdentityError(.notFound, field: "probe", "thrown by the body") }
        }
        #expect(e?.field == "probe")
        // The store still serves after a body threw.
        #expect(try await h.rows(UserRow.self).isEmpty)
    }

    @Test func aChildKilledDuringABurstOfWritesLeavesAConsistentDatabase() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("crash.sqlite").path
        let child = try await Program(try crashWriterURL(), [path]).start()
        var lines: [String] = []
        var committed = 0
        // Read until a few hundred commits are acknowledged (each line bounded by 60 s), then kill without warning.
        while committed < 300, let line = try? await child.nextLine(within: .seconds(60)) {
            lines.append(line)
            if line.hasPrefix("committed ") { committed += 1 }
        }
        child.kill()
        #expect(await child.wait(within: .seconds(60)) == .signaled(SIGKILL))
        // Only complete lines count (the child's lines end at their newline): a line cut by the kill was never acknowledged.
        lines += child.unreadLines()
        let ids = Set(lines.filter { $0.hasPrefix("committed ") }.map { String($0.dropFirst("committed ".count)) })
        #expect(ids.count >= 300)

        let reopened = try AppDatabase(path: path)
        #expect(try reopened.integrityProblems() == [])
        let (sessions, signUps, orphans) = try await reopened.pool.read { db in
            (
                Set(try String.fetchAll(db, sql: "SELECT id FROM session")),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM auditEvent WHERE kind = 'sign_up'")!,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session WHERE userId NOT IN (SELECT id FROM user)")!
            )
        }
        #expect(ids.isSubset(of: sessions), "acknowledged sessions lost: \(ids.subtracting(sessions).count)")
        // Every session and its audit row were written in one transaction: all or nothing.
        #expect(signUps == sessions.count && signUps >= ids.count)
        #expect(orphans == 0)
        try? FileManager.default.removeItem(at: dir)
    }

    /// A user's memberships are indexed once, by `membership(userId, resourceId, role)` (v13): the narrower
    /// `membership_userId` (v3) was its prefix and is dropped (v15). Every statement that finds memberships by user
    /// (the export, the erasure's cascade, the resource lists) searches a wider index; none scans the table. On
    /// PostgreSQL, an empty table's planner may take v22's `membership(userId, resourceType, ...)` instead: either
    /// starts at the user.
    @Test(arguments: StoreKind.testable) func membershipsByUserUseTheWiderIndexAlone(store: StoreKind) async throws {
        let h = try await Harness(store)
        let byUser = #"SELECT * FROM "membership" WHERE "userId" = 'u1'"#
        let cascade = #"DELETE FROM "membership" WHERE "userId" = 'u1'"#
        switch store {
        case .sqlite:
            let (indexes, plans) = try await h.database.pool.read { db in
                (
                    try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'membership'"),
                    try [byUser, cascade].map { sql in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String } }
                )
            }
            #expect(!indexes.contains("membership_userId") && indexes.contains("membership_userId_resourceId"), "\(indexes)")
            for plan in plans {
                #expect(plan.count == 1 && plan[0].hasPrefix("SEARCH membership USING") && plan[0].contains("membership_userId_resourceId (userId=?)"), "\(plan)")
            }
        case .postgres:
            let pg = try #require(h.postgres)
            let indexes = try await pg.client.query(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'membership'", logger: TestPostgres.quietLogger
            ).collect().map { try $0.decode(String.self) }
            #expect(!indexes.contains("membership_userId") && indexes.contains("membership_userId_resourceId"), "\(indexes)")
            let plans = try await pg.plansOnALargeTable([byUser, cascade])
            for plan in plans {
                #expect(
                    (plan.contains(#"on "membership_userId_resourceId""#) || plan.contains(#"on "membership_userId_resourceType""#)) && !plan.contains("Seq Scan"),
                    "\(plan)")
            }
        }
    }

    /// A membership arm of a resource list (issue 41) is one range of one index: the membership rows carry their
    /// resource's type and owner (v22), so the arm reads `membership(userId, resourceType, resourceId, role,
    /// resourceOwnerId)` alone, with no join to `resource`.
    @Test(arguments: StoreKind.testable) func aListsMembershipArmIsOneRangeOfOneIndex(store: StoreKind) async throws {
        let h = try await Harness(store)
        let plan = ResourcePlan.conditional(.or([.ownerIsSubject(subject: "u1", field: OwnerFieldName(.ownerId)), .memberRole(subject: "u1", roles: ["editor"])]))
        let query = try IdentityService.listQuery(
            type: "project", plan: .conditional(.memberRole(subject: "u1", roles: ["editor"])), after: "p1", limit: 100,
            placeholders: store == .sqlite ? .questionMarks : .numbered(first: 1))
        #expect(!query.sql.contains("UNION") && !query.sql.contains(#"FROM "resource""#), "\(query.sql)")
        switch store {
        case .sqlite:
            let both = try IdentityService.listQuery(type: "project", plan: plan, after: "p1", limit: 100, placeholders: .questionMarks)
            let plans = try await h.database.pool.read { db in
                try [query, both].map { query in
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: StatementArguments(query.bindings)).map { $0["detail"] as String }
                }
            }
            #expect(plans[0] == ["SEARCH listed USING COVERING INDEX membership_userId_resourceType (userId=? AND resourceType=? AND resourceId>?)"], "\(plans[0])")
            #expect(plans[1].contains { $0.contains("SEARCH listed USING COVERING INDEX membership_userId_resourceType (userId=? AND resourceType=? AND resourceId>?)") }, "\(plans[1])")
            // The two arms merged in their indexes' order: no arm's rows sorted again.
            #expect(plans[1].first == "MERGE (UNION)" && !plans[1].contains { $0.contains("TEMP B-TREE") }, "\(plans[1])")
        case .postgres:
            let pg = try #require(h.postgres)
            let indexes = try await pg.client.query(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'membership'", logger: TestPostgres.quietLogger
            ).collect().map { try $0.decode(String.self) }
            #expect(indexes.contains("membership_userId_resourceType"), "\(indexes)")
            // An empty table is read whole whatever its indexes: ask for the plan a large one would get.
            let binds = query.bindings.reduce(into: PostgresBindings()) { binds, value in
                switch value {
                case .text(let s): binds.append(s)
                case .int(let i): binds.append(i)
                case .double(let d): binds.append(d)
                case .bool(let b): binds.append(b)
                }
            }
            let plan = try await pg.withConnection { connection in
                try await connection.query("BEGIN", logger: TestPostgres.quietLogger)
                try await connection.query("SET LOCAL enable_seqscan = off", logger: TestPostgres.quietLogger)
                let lines = try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: binds), logger: TestPostgres.quietLogger).collect()
                try await connection.query("ROLLBACK", logger: TestPostgres.quietLogger)
                return try lines.map { try $0.decode(String.self) }.joined(separator: "\n")
            }
            #expect(plan.contains(#"using "membership_userId_resourceType""#) && !plan.contains(#"on "resource""#), "\(plan)")
        }
    }

    /// A decision reads the session columns it judges by, named one by one: not the session's secrets (the token
    /// hashes, the refresh key), nor a column added to `session` later. On SQLite the added column fails whenever it
    /// is read (a virtual column whose value overflows), so a `SELECT *` of the session fails the decision; on
    /// PostgreSQL the one statement's result columns are checked.
    @Test(arguments: StoreKind.testable) func aDecisionReadsOnlyTheSessionColumnsItJudgesBy(store: StoreKind) async throws {
        let h = try await Harness(store)
        let signedIn = try await h.service.signInAnonymously(source: .inProcess)
        let key = try #require(h.service.cacheKey(accessToken: signedIn.accessToken))
        switch store {
        case .sqlite:
            try await h.execute("ALTER TABLE session ADD COLUMN laterSecret INTEGER GENERATED ALWAYS AS (abs(-9223372036854775808)) VIRTUAL")
        case .postgres:
            try await h.execute(#"ALTER TABLE "session" ADD COLUMN "laterSecret" TEXT NOT NULL DEFAULT 'later-secret'"#)
            var binds = PostgresBindings()
            binds.append(ByteBuffer(bytes: key))
            binds.append(String?.none)
            let rows = try await h.postgres!.client.query(PostgresQuery(unsafeSQL: PostgresStore.decisionRowsSQL, binds: binds), logger: TestPostgres.quietLogger).collect()
            let columns = Set(try #require(rows.first).makeRandomAccess().map(\.columnName))
            let secrets: Set<String> = ["laterSecret", "refreshKey", "accessTokenHash", "previousAccessTokenHash"]
            #expect(columns.isDisjoint(with: secrets), "\(columns.intersection(secrets).sorted())")
            #expect(columns.contains("userId"))
        }
        let read = try await h.service.readDecisionFacts(accessTokenKey: key, resourceId: nil, at: h.clock.now)
        #expect(read.session?.userId == signedIn.userId)
        #expect(read.session?.subject.id == signedIn.userId)
    }
}

/// The `identity-crash-writer` executable built beside the test binary.
func crashWriterURL() throws -> URL {
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var dir = exe.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent("identity-crash-writer")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    throw IdentityError(.notFound, field: "identity-crash-writer", "build the executable target first")
}
