import Foundation
import GRDB
import PolicyModel
import Testing
import Crypto
import PostgresNIO

@testable import Identity
@testable import IdentityPostgres

/// Decision records in both stores (issue 37): one transaction per batch, the facts pseudonymised with the
/// deployment's key, the operator's reads newest first behind a cursor, erasure and retention.
@Suite(.storeScope) struct DecisionRecordStoreTests {
    static func draft(_ userId: String?, action: String = "view", effect: String = "deny", owner: String? = nil, fromSession: Bool = true) -> DecisionRecordDraft {
        var subject = Subject()
        if let userId { subject = Subject(id: userId, tier: "free", roles: ["customer"], auth: Authentication(method: "pin", verifiedAt: Date(timeIntervalSince1970: 1_795_000_000))) }
        let request = Request(
            subject: subject, action: action,
            resource: Resource(type: "project", id: "p1", ownerId: owner, members: owner.map { [$0: "owner"] } ?? [:], usage: ["sources": 3]),
            context: Context(now: Date(timeIntervalSince1970: 1_795_000_060)))
        return DecisionRecordDraft(request: request, effect: effect, reason: effect == "deny" ? "access_denied" : "allowed", policyHash: "h1", policyLocation: nil, fromSession: fromSession)
    }

    @Test(arguments: StoreKind.testable) func recordsArePseudonymisedPagedAndErased(store: StoreKind) async throws {
        let h = try await Harness(store)
        let pin = "739154"
        let alice = try await h.service.register(username: "alice", pin: pin, source: .inProcess)
        let bob = try await h.service.register(username: "bob", pin: "8624", source: .inProcess)
        var drafts: [DecisionRecordDraft] = []
        for i in 0..<7 { drafts.append(Self.draft(alice.userId, action: "a\(i)", owner: bob.userId)) }
        drafts.append(Self.draft(bob.userId, effect: "allow", owner: bob.userId))
        try await h.service.writeDecisionRecords(drafts)
        let op = OperatorCredential(token: OperatorCredential.testToken)
        let names = try await h.service.decisionPseudonyms()
        // The same key on a second service over the same store (another replica).
        #expect(names.pseudonym(alice.userId).hasPrefix("u-") && names.pseudonym(alice.userId) != names.pseudonym(bob.userId))

        var filter = LogFilter()
        filter.userId = alice.userId
        let first = try await h.service.decisionRecords(filter, cursor: nil, limit: 5, operator: op)
        #expect(first.rows.map(\.action) == ["a6", "a5", "a4", "a3", "a2"])
        let second = try await h.service.decisionRecords(filter, cursor: first.next, limit: 5, operator: op)
        #expect(second.rows.map(\.action) == ["a1", "a0"] && second.next == nil)
        let facts = try Request(json: try #require(first.rows[0].facts))
        #expect(facts.subject.id == names.pseudonym(alice.userId))
        #expect(facts.resource.ownerId == names.pseudonym(bob.userId) && facts.resource.members[names.pseudonym(bob.userId)] == "owner")
        #expect(facts.resource.usage["sources"] == 3 && facts.subject.tier == "free")
        var allowed = LogFilter()
        allowed.decision = "allow"
        #expect(try await h.service.decisionRecords(allowed, cursor: nil, limit: 100, operator: op).rows.count == 1)
        await #expect(throws: IdentityError.self) { try await h.service.decisionRecords(filter, cursor: "bogus", limit: 5, operator: op) }
        await #expect(throws: IdentityError.self) { try await h.service.decisionRecords(filter, cursor: nil, limit: 5, operator: OperatorCredential(token: "nope")) }
        var audit = LogFilter()
        audit.userId = alice.userId
        let events = try await h.service.auditEvents(audit, cursor: nil, limit: 100, operator: op)
        #expect(!events.rows.isEmpty && events.rows.allSatisfy { $0.actor != nil })

        // Nothing secret in any record.
        let all = try await h.service.decisionRecords(LogFilter(), cursor: nil, limit: 100, operator: op).rows
        let text = all.map { "\($0)" }.joined()
        for secret in [alice.accessToken, alice.refreshToken, bob.accessToken, bob.refreshToken, pin, alice.userId, bob.userId] {
            #expect(!text.contains(secret))
        }

        // Erasure: alice's records lose subject, facts and resource id; bob's stay.
        try await h.service.deleteAccount(accessToken: alice.accessToken)
        #expect(try await h.service.decisionRecords(filter, cursor: nil, limit: 100, operator: op).rows.isEmpty)
        let after = try await h.service.decisionRecords(LogFilter(), cursor: nil, limit: 100, operator: op).rows
        #expect(after.count == 8)
        #expect(after.filter { $0.facts == nil && $0.subject == nil && $0.resourceId == nil }.count == 7)

        // A record of a user deleted before it was written is written as an erasure leaves it.
        try await h.service.writeDecisionRecords([Self.draft(alice.userId, action: "late")])
        let late = try #require(try await h.service.decisionRecords(LogFilter(), cursor: nil, limit: 1, operator: op).rows.first)
        #expect(late.action == "late" && late.facts == nil && late.subject == nil)
    }

    /// A pseudonym is HMAC-SHA256 of `gatehouse.decision.user|` and the id under the deployment's key, its first 16
    /// bytes in lower-case hex: the continued keyed state and the memo give exactly that, for every id of a request.
    /// A caller chooses the action, resource type and id: one holding U+0000 (valid JSON, `"\u0000"`) must not fail its
    /// batch. PostgreSQL's text takes no NUL, so a batch holding such a record was refused whole and every record in it
    /// dropped: a way to keep other requests' decisions out of the log. The row's columns write U+0000 as U+FFFD (the
    /// facts keep it, escaped in their JSON).
    @Test(arguments: StoreKind.testable) func aNulInWhatTheCallerChoseDoesNotFailTheBatch(store: StoreKind) async throws {
        let h = try await Harness(store)
        var hostile = Self.draft(nil, action: "a\u{0}b", fromSession: false)
        hostile.request.resource.type = "pro\u{0}ject"
        hostile.request.resource.id = "\u{0}"
        try await h.service.writeDecisionRecords([Self.draft(nil, action: "before", fromSession: false), hostile, Self.draft(nil, action: "after", fromSession: false)])
        let rows = try await h.service.store.read { tx in try await tx.fetchAll(DecisionLogRow.self, [:]) }.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
        #expect(rows.map(\.action) == ["before", "a\u{FFFD}b", "after"])
        #expect(rows.count == 3 && rows[1].resourceType == "pro\u{FFFD}ject" && rows[1].resourceId == "\u{FFFD}")
        #expect(rows.count == 3 && rows[1].facts?.contains(#"a\u0000b"#) == true)
    }

    /// `holdsNUL` reads a contiguous string's bytes with `memchr` and any other byte by byte: the same answer for small
    /// (inline) and large strings, a NUL first, last or absent, and strings made from slices and scalars.
    @Test func aNulIsFoundWhereverItIsAndHoweverTheStringIsHeld() {
        let long = String(repeating: "x", count: 200)
        let cases: [(String, Bool)] = [
            ("", false), ("a", false), ("\u{0}", true), ("a\u{0}", true), (long, false), (long + "\u{0}", true),
            ("\u{0}" + long, true), (String(long.dropFirst(3)), false), (String((long + "\u{0}y").dropFirst(150)), true),
            (String(String.UnicodeScalarView([Unicode.Scalar(0)!, "é"])), true), ("é" + long + "ü", false),
        ]
        for (text, expected) in cases {
            #expect(IdentityService.holdsNUL(text) == expected, "\(text.utf8.count) bytes")
            #expect(IdentityService.holdsNUL(text) == text.utf8.contains(0))
        }
        // Cut past the bound after the NUL is replaced: the replacement (3 bytes) counts toward the bound.
        let cut = IdentityService.bounded(String(repeating: "a", count: 125) + "\u{0}" + long)
        #expect(cut == String(repeating: "a", count: 125) + "...")
        #expect(IdentityService.bounded(String(repeating: "a", count: 60) + "\u{0}") == String(repeating: "a", count: 60) + "\u{FFFD}")
    }

    @Test func pseudonymsAreTheKeyedHashOfTheId() throws {
        let key = Data((0..<32).map { UInt8($0 * 7 % 256) })
        let names = DecisionPseudonyms(key: key)
        func expected(_ id: String) -> String {
            let mac = HMAC<SHA256>.authenticationCode(for: Data(("gatehouse.decision.user|" + id).utf8), using: SymmetricKey(data: key))
            return "u-" + mac.map { String(format: "%02x", $0) }.joined().prefix(32)
        }
        for id in ["u1", "", "ünïcødé-👩‍💻", String(repeating: "x", count: 300)] {
            #expect(names.pseudonym(id) == expected(id))
        }
        let request = Request(
            subject: Subject(id: "alice"), action: "view",
            resource: Resource(type: "project", ownerId: "bob", members: ["alice": "editor", "bob": "owner"]))
        let p = names.pseudonymised(request)
        #expect(p.subject.id == expected("alice") && p.resource.ownerId == expected("bob"))
        #expect(p.resource.members == [expected("alice"): "editor", expected("bob"): "owner"])
    }

    /// SQLite writes a batch of decision records through one cached statement: every column holds what GRDB's record
    /// insert writes for the same row (a date with a fraction of a second, nils, text with escapes).
    @Test func theDecisionLogBatchWritesWhatTheRecordInsertWrites() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-decision-batch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let database = try AppDatabase(path: dir.appendingPathComponent("t.sqlite").path)
        let rows = [
            DecisionLogRow(
                id: nil, at: Date(timeIntervalSince1970: 1_795_000_000.123_456), actor: "p-1", action: "view", resourceType: "project",
                resourceId: "r\"1", effect: "deny", reason: "access_denied", policyHash: "h", policyLocation: "projects.yaml:3:5", subject: "u-1",
                facts: #"{"action":"view"}"#),
            DecisionLogRow(
                id: nil, at: Date(timeIntervalSince1970: 1_795_000_001), actor: nil, action: "add_source", resourceType: "app", resourceId: nil,
                effect: "allow", reason: "allowed", policyHash: "h", policyLocation: nil, subject: nil, facts: nil),
        ]
        try await database.pool.write { db in
            for row in rows { try RowBox(row).insert(db) }
            try DecisionLogRow.insertAll(rows, db)
        }
        let written = try await database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM decisionLog ORDER BY id") }
        try #require(written.count == 4)
        for (generic, batch) in [(written[0], written[2]), (written[1], written[3])] {
            for column in generic.columnNames where column != "id" {
                #expect((generic[column] as DatabaseValue) == (batch[column] as DatabaseValue), "\(column)")
            }
        }
        #expect(Set(written.map { $0["id"] as Int64 }).count == 4)
    }

    /// A batch goes in statements of many rows, then of 8, then of one: 64 + 2 × 8 + 3 rows cross every kind and every
    /// boundary, and each row lands whole, in order, beside its neighbours' values (empty and non-ASCII text among them).
    @Test func aLongBatchWritesEveryRowInOrder() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-decision-batch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let database = try AppDatabase(path: dir.appendingPathComponent("t.sqlite").path)
        let rows = (0..<(DecisionLogRow.rowsPerStatement + 19)).map { i in
            DecisionLogRow(
                id: nil, at: Date(timeIntervalSince1970: 1_795_000_000 + Double(i) / 8), actor: i % 3 == 0 ? nil : "p-\(i)",
                action: i % 5 == 0 ? "" : "view-\(i)", resourceType: "prøject", resourceId: i % 2 == 0 ? nil : "r\"\(i)",
                effect: i % 2 == 0 ? "allow" : "deny", reason: "reason-\(i)", policyHash: String(repeating: "h", count: i),
                policyLocation: i % 4 == 0 ? nil : "projects.yaml:\(i):5", subject: "u-\(i)", facts: #"{"i":"\#(i)","x":"é"}"#)
        }
        try await database.pool.write { db in try DecisionLogRow.insertAll(rows, db) }
        let written = try await database.pool.read { db in try RowBox<DecisionLogRow>.fetchAll(db, sql: "SELECT * FROM decisionLog ORDER BY id").map(\.value) }
        try #require(written.count == rows.count)
        for (row, back) in zip(rows, written) {
            var expected = row
            expected.id = back.id
            expected.at = back.at
            #expect(back == expected)
            #expect(abs(back.at.timeIntervalSince(row.at)) < 0.001)
        }
    }
}

/// The decision log's user indexes (`actor`, `subject`) hold only the rows that name a user (v23): a caller-named
/// subject that is no user of the store, a signed-out one and an erased row cost no entry, while an erasure's
/// `actor = ?` and a read's `subject = ?` still search the index.
@Suite(.storeScope) struct DecisionLogIndexTests {
    @Test(arguments: StoreKind.testable) func theUserIndexesHoldOnlyRowsThatNameAUser(store: StoreKind) async throws {
        let h = try await Harness(store)
        let erasure = #"UPDATE "decisionLog" SET "facts" = NULL WHERE "actor" = 'p-1'"#
        let read = #"SELECT "id" FROM "decisionLog" WHERE "subject" = 'u-1' ORDER BY "id" DESC LIMIT 10"#
        switch store {
        case .sqlite:
            let (definitions, plans) = try await h.database.pool.read { db in
                (
                    try String.fetchAll(
                        db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name IN ('decisionLog_actor', 'decisionLog_subject') ORDER BY name"),
                    try [erasure, read].map { sql in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "\n") }
                )
            }
            #expect(definitions.count == 2)
            #expect(definitions.allSatisfy { $0.contains("WHERE") && $0.contains("IS NOT NULL") }, "\(definitions)")
            #expect(plans[0].contains("decisionLog_actor (actor=?)"), "\(plans[0])")
            #expect(plans[1].contains("decisionLog_subject (subject=?)"), "\(plans[1])")
        case .postgres:
            let pg = try #require(h.postgres)
            let definitions = try await pg.client.query(
                """
                SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'decisionLog'
                AND indexname IN ('decisionLog_actor', 'decisionLog_subject') ORDER BY indexname
                """, logger: TestPostgres.quietLogger
            ).collect().map { try $0.decode(String.self) }
            #expect(definitions.count == 2)
            #expect(definitions.allSatisfy { $0.contains("WHERE") && $0.contains("IS NOT NULL") }, "\(definitions)")
            let plans = try await pg.plansOnALargeTable([erasure, read])
            #expect(plans[0].contains(#"using "decisionLog_actor""#) && !plans[0].contains("Seq Scan"), "\(plans[0])")
            #expect(plans[1].contains(#"using "decisionLog_subject""#) || plans[1].contains(#"using "decisionLog_pkey""#), "\(plans[1])")
        }
    }
}
