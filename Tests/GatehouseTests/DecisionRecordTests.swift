import Foundation
import GRDB
import Synchronization
import Gatehouse
import Testing

/// Decision records (issue 37, item 1): written off the answer's path through a bounded queue, holding the request as
/// decided with user ids pseudonymised, never a secret; covered by export and erasure.
@Suite struct DecisionRecordTests {
    /// A store write held open until `release` is called: the store's lock, as a stalled database would hold it.
    final class HeldWrite: Sendable {
        private let release: AsyncStream<Void>.Continuation
        let task: Task<Void, any Error>

        /// Holds the store's writer; returns once it is held.
        init(_ identity: IdentityService) async {
            let (entered, enteredSignal) = AsyncStream<Void>.makeStream()
            let (gate, release) = AsyncStream<Void>.makeStream()
            self.release = release
            task = Task {
                try await identity.store.write { _ in
                    enteredSignal.yield()
                    for await _ in gate { break }
                }
            }
            for await _ in entered { break }
        }

        func open() async {
            release.yield()
            release.finish()
            _ = await task.result
        }
    }

    static func subject(_ i: Int) -> Subject {
        Subject(id: "caller-\(i)", tier: "free", roles: ["customer"], auth: Authentication(method: "pin", verifiedAt: Date()))
    }

    static func rows(_ f: Facade) async throws -> [Row] {
        try await f.database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM decisionLog ORDER BY id") }
    }

    /// The store's writer is held (a stalled database): every decision is still answered, records past the queue's
    /// capacity are dropped and counted, and once the store answers again what was queued is written.
    @Test func aStalledStoreNeverDelaysADecision() async throws {
        let f = try Facade(policySet: "research-crawler", recording: DecisionRecording(mode: .all, queueCapacity: 8, batchSize: 4), trust: true)
        let policy = f.gate.policy
        // The key is read before the store stalls (it is read once, on the first batch).
        _ = try await f.identity.decisionPseudonyms()
        let held = await HeldWrite(f.identity)
        let made = 100
        for i in 0..<made {
            let request = Request(subject: Self.subject(i), action: "add_source", resource: Resource(type: "project"))
            _ = try await f.gate.decide(request, bearer: nil, by: policy)
        }
        let stalled = f.gate.recorder.counts
        #expect(stalled.written == 0)
        #expect(stalled.droppedQueueFull >= made - 8 - 4, "\(stalled)")
        await held.open()
        await f.gate.flushDecisionRecords()
        let counts = f.gate.recorder.counts
        #expect(counts.written + counts.dropped == made, "\(counts)")
        #expect(try await Self.rows(f).count == counts.written)
    }

    /// A clean shutdown writes everything queued; what is offered after it is dropped and counted.
    @Test func closingFlushesWhatIsQueued() async throws {
        let f = try Facade(policySet: "research-crawler", recording: DecisionRecording(mode: .all, batchSize: 3), trust: true)
        let policy = f.gate.policy
        for i in 0..<25 {
            _ = try await f.gate.decide(Request(subject: Self.subject(i), action: "view", resource: Resource(type: "project", id: "p\(i)")), bearer: nil, by: policy)
        }
        await f.gate.recorder.close()
        #expect(try await Self.rows(f).count == 25)
        _ = try await f.gate.decide(Request(subject: Self.subject(99), action: "view", resource: Resource(type: "project")), bearer: nil, by: policy)
        await f.gate.flushDecisionRecords()
        #expect(f.gate.recorder.counts.droppedClosed == 1)
        #expect(try await Self.rows(f).count == 25)
    }

    /// A record holds the request as decided (tier, roles, auth, the resource's owner, members and usage, the time) with
    /// every user id replaced by its keyed pseudonym, which matches across subject, owner and members; no token, PIN or
    /// user id appears in a record or in the export.
    @Test func nothingSecretInARecordOrTheExport() async throws {
        let f = try Facade(policySet: "research-crawler", log: .all)
        let pins = ["8624", "739154"]
        let owner = try await f.identity.register(username: "olga", pin: pins[0], source: .inProcess)
        let member = try await f.identity.register(username: "mika", pin: pins[1], source: .inProcess)
        let project = try await f.identity.createSpace(accessToken: owner.accessToken, name: "P", type: "project", inviteRole: "editor")
        _ = try await f.identity.joinSpace(accessToken: member.accessToken, shareCode: project.shareCode, source: .inProcess)
        let resource = Resource(type: "project", id: project.resourceId)
        for action in ["view", "edit", "delete", "add_source", "ai_suggestions"] {
            _ = try await f.gate.decide(token: owner.accessToken, action: action, resource: resource)
            _ = try await f.gate.decide(token: member.accessToken, action: action, resource: resource)
        }
        await f.gate.flushDecisionRecords()
        let export = try await f.identity.exportData(accessToken: owner.accessToken)
        let rows = try await Self.rows(f)
        #expect(rows.count == 10)
        let records = rows.map { row in row.columnNames.map { "\(row[$0] as DatabaseValue)" }.joined(separator: "|") }.joined(separator: "\n")
        let dump = records + String(decoding: export, as: UTF8.self)
        for secret in [owner.accessToken, owner.refreshToken, member.accessToken, member.refreshToken, project.shareCode] {
            #expect(!dump.contains(secret), "a record or the export holds a secret")
        }
        // A PIN as a value of its own (its digits may occur inside a hex hash or pseudonym).
        for pin in pins { #expect(dump.range(of: "(?<![0-9a-f])\(pin)(?![0-9a-f])", options: .regularExpression) == nil, "a record or the export holds a PIN") }
        // The records name no user in the clear (the export names its own account, as it should).
        for id in [owner.userId, member.userId] { #expect(!records.contains(id), "a record holds a user id in the clear") }

        let names = try await f.identity.decisionPseudonyms()
        let ownerRows = rows.filter { ($0["subject"] as String?) == names.pseudonym(owner.userId) }
        #expect(ownerRows.count == 5)
        let facts = try #require(ownerRows.first.flatMap { $0["facts"] as String? })
        let request = try Request(json: facts)
        #expect(request.subject.id == names.pseudonym(owner.userId))
        #expect(request.resource.ownerId == names.pseudonym(owner.userId))
        #expect(request.resource.members[names.pseudonym(member.userId)] == "editor")
        #expect(request.subject.auth?.method == "pin")
        #expect(request.context.now != nil)
        // Re-deciding the recorded request gives the recorded outcome.
        for row in rows {
            let r = try Request(json: try #require(row["facts"] as String?))
            let again = f.gate.policy.decide(r)
            #expect(again.effect.rawValue == row["effect"] as String && again.reason.rawValue == row["reason"] as String, "\(r.action)")
            // The deciding rule's place, as the recorder remembers each one's text.
            #expect(again.policy?.description == row["policyLocation"] as String?, "\(r.action)")
        }
        #expect(Set(rows.compactMap { $0["policyLocation"] as String? }).count > 1)
        // The export shows the user's own records with their facts.
        let object = try #require(try JSONSerialization.jsonObject(with: export) as? [String: Any])
        let decisions = try #require(object["decisions"] as? [[String: Any]])
        #expect(decisions.count == 5 && decisions.allSatisfy { $0["facts"] is [String: Any] })
    }

    /// Erasure leaves the user's records unlinkable: no subject pseudonym, no facts, no resource id.
    @Test func erasureClearsTheRecordsFacts() async throws {
        let f = try Facade(policySet: "research-crawler", log: .all)
        let user = try await f.identity.register(username: "erin", pin: "8624", source: .inProcess)
        _ = try await f.gate.decide(token: user.accessToken, action: "ai_suggestions", resource: Resource(type: "app"))
        await f.gate.flushDecisionRecords()
        let names = try await f.identity.decisionPseudonyms()
        #expect(try await Self.rows(f).contains { ($0["subject"] as String?) == names.pseudonym(user.userId) })
        try await f.identity.deleteAccount(accessToken: user.accessToken)
        let rows = try await Self.rows(f)
        #expect(rows.count == 1)
        #expect(rows.allSatisfy { ($0["subject"] as String?) == nil && ($0["facts"] as String?) == nil && ($0["resourceId"] as String?) == nil })
        // Anything else is still refused.
        #expect(throws: DatabaseError.self) { try f.database.pool.write { db in try db.execute(sql: "UPDATE decisionLog SET facts = '{}'") } }
    }

    /// N6: a signed-out decision is recorded only when asked for; one request adds at most its allowance; identical
    /// signed-out records of one client within the window are written once; the quota drops what is past it.
    @Test func signedOutRecordsAreOptInCoalescedAndBounded() async throws {
        let f = try Facade(policySet: "research-crawler", log: .denied)
        let policy = f.gate.policy
        let denied = Request(action: "no_such_action", resource: Resource(type: "app"))
        _ = try await f.gate.decide(denied, bearer: nil, by: policy)
        await f.gate.flushDecisionRecords()
        #expect(try await Self.rows(f).isEmpty)

        let admitted = Mutex(0)
        let g = try Facade(
            policySet: "research-crawler",
            recording: DecisionRecording(
                mode: .denied, signedOut: true, maxPerRequest: 5,
                admit: { _, _ in admitted.withLock { n in n += 1; return n <= 3 } }))
        // 1,000 identical items from one client: one record (coalesced), the rest counted.
        let origin = DecisionOrigin(client: "198.51.100.7", maxRecords: 1_000)
        _ = try await g.gate.decideBatch(Array(repeating: .success(denied), count: 1_000), bearer: nil, by: policy, origin: origin)
        await g.gate.flushDecisionRecords()
        #expect(try await Self.rows(g).count == 1)
        #expect(g.gate.recorder.counts.coalesced == 999)
        // 1,000 distinct items in one request: at most its allowance (5) pass, and the quota admits 2 more of them.
        let distinct = (0..<1_000).map { i in Result<Request, RequestError>.success(Request(action: "no_such_action", resource: Resource(type: "app", id: "r\(i)"))) }
        _ = try await g.gate.decideBatch(distinct, bearer: nil, by: policy, origin: DecisionOrigin(client: "198.51.100.8", maxRecords: 5))
        await g.gate.flushDecisionRecords()
        let counts = g.gate.recorder.counts
        #expect(counts.droppedRequestCap == 995)
        #expect(counts.droppedQuota == 3)
        #expect(try await Self.rows(g).count == 3)
    }

    /// `sample:R` records about that share of decisions (a wide band: the draw is random).
    @Test func sampledRecording() async throws {
        #expect(DecisionLogMode("sample:0.25") == .sample(0.25))
        #expect(DecisionLogMode("sample:1") == .all)
        #expect(DecisionLogMode("sample:0") == nil && DecisionLogMode("sample:1.5") == nil && DecisionLogMode("some") == nil)
        let f = try Facade(policySet: "research-crawler", recording: DecisionRecording(mode: .sample(0.25)), trust: true)
        for i in 0..<2_000 {
            _ = try await f.gate.decide(Request(subject: Self.subject(i), action: "view", resource: Resource(type: "project")), bearer: nil, by: f.gate.policy)
        }
        await f.gate.flushDecisionRecords()
        let written = f.gate.recorder.counts.written
        #expect(written > 300 && written < 700, "\(written) of 2000")
    }
}
