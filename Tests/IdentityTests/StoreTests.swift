import Foundation
import GRDB
import PolicyModel
import Testing

@testable import Identity

@Suite struct StoreTests {
    @Test func theDatabaseIsConfiguredForSecurityData() async throws {
        let h = try Harness()
        let (journal, sync, fk) = try await h.database.pool.write { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode")!, try Int.fetchOne(db, sql: "PRAGMA synchronous")!, try Int.fetchOne(db, sql: "PRAGMA foreign_keys")!)
        }
        #expect(journal == "wal" && sync == 2 && fk == 1)  // 2 = FULL
        #expect(h.database.pool.configuration.publicStatementArguments == false)
        let applied = try await h.database.pool.read { db in try AppDatabase.migrator.appliedIdentifiers(db) }
        #expect(applied == Set(Schema.migrations.map(\.0)))
        // Reopening an existing file migrates nothing and keeps the data.
        _ = try await h.service.signInAnonymously(source: .inProcess)
        let reopened = try AppDatabase(path: h.dir.appendingPathComponent("identity.sqlite").path)
        #expect(try await reopened.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM user") } == 1)
        #expect(try reopened.integrityProblems().isEmpty)
    }

    @Test func theAuditLogIsAppendOnly() async throws {
        let h = try Harness()
        _ = try await h.service.signInAnonymously(source: .inProcess)
        for sql in ["UPDATE auditEvent SET outcome = 'failure'", "DELETE FROM auditEvent"] {
            #expect(throws: DatabaseError.self) { try h.database.pool.write { db in try db.execute(sql: sql) } }
        }
        #expect(try h.auditRows().count == 1)
    }

    @Test func aWriteThatFailsMidwayLeavesTheDatabaseAsItWas() async throws {
        let h = try Harness()
        let tables = ["user", "privacySettings", "session", "refreshToken", "auditEvent"]
        _ = try await h.service.signInAnonymously(source: .inProcess)
        let before = try tables.map { try h.count($0) }
        // The audit insert is the last write of a sign-in: make it fail after the user and session rows went in.
        try await h.database.pool.write { db in
            try db.execute(sql: "CREATE TEMP TRIGGER failAudit BEFORE INSERT ON main.auditEvent BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        let e = await identityError { try await h.service.signInAnonymously(source: .inProcess) }
        #expect(e?.code == .storage && e?.field == "database")
        #expect(try tables.map { try h.count($0) } == before)
        try await h.database.pool.write { db in try db.execute(sql: "DROP TRIGGER failAudit") }
        _ = try await h.service.signInAnonymously(source: .inProcess)
        #expect(try h.count("session") == before[2] + 1)
    }

    @Test func aDeletionThatFailsMidwayRevokesNothingAndMovesNothing() async throws {
        let h = try Harness()
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let partner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        _ = try await h.service.joinSpace(accessToken: partner.accessToken, shareCode: space.shareCode, source: .inProcess)
        let audit = try h.auditRows().count
        try await h.database.pool.write { db in
            try db.execute(sql: "CREATE TEMP TRIGGER failDelete BEFORE DELETE ON main.user BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        #expect(await identityError { try await h.service.deleteAccount(accessToken: owner.accessToken) }?.code == .storage)
        _ = try await h.service.validate(accessToken: owner.accessToken)  // sessions were not revoked
        #expect(try await h.service.resourceFacts(resourceId: space.resourceId).ownerId == owner.userId)
        #expect(try h.auditRows().count == audit)
    }

    @Test func aChildKilledDuringABurstOfWritesLeavesAConsistentDatabase() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("crash.sqlite").path
        let child = Process()
        child.executableURL = try crashWriterURL()
        child.arguments = [path]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        var text = ""
        var committed = 0
        // Read until a few hundred commits are acknowledged, then kill without warning.
        while committed < 300 {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            committed = text.components(separatedBy: "\n").filter { $0.hasPrefix("committed ") }.count
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        text += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // Only complete lines count: a line cut by the kill was never acknowledged.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
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
