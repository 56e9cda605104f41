import Foundation
import PolicyModel
import Synchronization
import Testing

@testable import Identity
@testable import IdentityPostgres

/// A checked PIN attempt is never missing from the audit log: its row is written with its reservation (the write
/// that counts it), so a settling write the store then refuses (deadline, `storage_unavailable`, retries spent)
/// cannot leave a counted, checked guess without a row.
@Suite(.storeScope) struct PINAuditTests {
    /// The audit rows of PIN checks (kind `sign_in`), oldest first.
    func signInRows(_ h: Harness) async throws -> [AuditEventRow] {
        try await h.auditRows().filter { $0.kind == AuditKind.signIn.rawValue }
    }

    func pseudonym(_ h: Harness, _ userId: String) async throws -> String {
        try #require(try await h.rows(UserRow.self).first { $0.id == userId }).pseudonym
    }

    /// A known user, a wrong PIN, and every write after the reservation refused (the settle and the lone audit
    /// append it falls back to): the attempt is counted and has one row, which does not read as a success.
    @Test(arguments: StoreKind.testable)
    func aWrongPINWhoseSettleFailsStillHasItsAuditRow(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        let alice = try await h.pinUser("alice", pin: "739154")
        let (service, store) = try h.serviceFailingWrites { $0 >= 2 }
        let code = await outcomeCode { try await service.signIn(username: "alice", pin: "846213", source: .inProcess) }
        #expect(code == "storage_unavailable")
        #expect(store.writes >= 2, "the settle was not attempted")
        #expect(try await h.pinCredentials()[0].failedAttempts == 1, "the checked attempt is counted")
        let rows = try await signInRows(h)
        #expect(rows.count == 1, "a checked, counted attempt left \(rows.count) audit rows")
        let row = try #require(rows.first)
        #expect(row.actor == (try await pseudonym(h, alice.userId)))
        #expect(row.method == AuthMethod.pin && row.outcome == "pending" && row.reason == "pin_checked", "\(row)")
    }

    /// The same for an unknown username: one row for the checked attempt, without an actor.
    @Test(arguments: StoreKind.testable)
    func anUnknownUsernameWhoseSettleFailsStillHasItsAuditRow(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        let (service, _) = try h.serviceFailingWrites { $0 >= 2 }
        let code = await outcomeCode { try await service.signIn(username: "nobody", pin: "846213", source: .inProcess) }
        #expect(code == "storage_unavailable")
        #expect(try await h.rows(PINThrottleRow.self).first?.failures == 1, "the checked attempt is counted")
        let rows = try await signInRows(h)
        #expect(rows.count == 1, "a checked, counted attempt left \(rows.count) audit rows")
        let row = try #require(rows.first)
        #expect(row.actor == nil)
        #expect(row.method == AuthMethod.pin && row.outcome == "pending" && row.reason == "pin_checked", "\(row)")
    }

    /// A right PIN whose settle fails: the attempt stays counted, and its one row reads "checked, outcome not
    /// recorded", never as a success (no session was issued).
    @Test(arguments: StoreKind.testable)
    func aRightPINWhoseSettleFailsIsNotAuditedAsASuccess(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        _ = try await h.pinUser("alice", pin: "739154")
        let sessions = try await h.count("session")
        let (service, _) = try h.serviceFailingWrites { $0 >= 2 }
        let code = await outcomeCode { try await service.signIn(username: "alice", pin: "739154", source: .inProcess) }
        #expect(code == "storage_unavailable")
        #expect(try await h.count("session") == sessions)
        let rows = try await signInRows(h)
        #expect(rows.map(\.outcome) == ["pending"], "\(rows)")
        #expect(!rows.contains { $0.outcome == "success" })
        // A settled attempt beside it: the query docs/identity.md gives operators finds only the unsettled one.
        _ = try await h.service.signIn(username: "alice", pin: "739154", source: .inProcess)
        #expect(try await h.integers(Self.unsettled) == [Int(try #require(rows.first?.id))])
    }

    /// The attempts whose outcome was not recorded, as docs/identity.md states it (both stores' SQL).
    static let unsettled = """
        SELECT p."id" FROM "auditEvent" p WHERE p."outcome" = 'pending'
            AND NOT EXISTS (SELECT 1 FROM "auditEvent" o WHERE o."attempt" = p."attempt" AND o."id" <> p."id") ORDER BY p."id"
        """

    /// When only the settle fails and the lone append it falls back to lands, the attempt has its row and its
    /// outcome: one `pending` row and one `wrong_pin` failure, nothing else.
    @Test(arguments: StoreKind.testable)
    func aSettleThatFailsOnceStillRecordsTheOutcome(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        _ = try await h.pinUser("alice", pin: "739154")
        let (service, _) = try h.serviceFailingWrites { $0 == 2 }
        let code = await outcomeCode { try await service.signIn(username: "alice", pin: "846213", source: .inProcess) }
        #expect(code == "storage_unavailable")
        let rows = try await signInRows(h)
        #expect(rows.map { "\($0.outcome) \($0.reason ?? "-")" } == ["pending pin_checked", "failure wrong_pin"], "\(rows)")
        #expect(rows.count == 2 && rows[0].attempt != nil && rows[0].attempt == rows[1].attempt, "the outcome is not linked to its reservation")
    }

    /// A right PIN, nothing failing: the rows it always had (its `success`) plus the reservation's `pending`
    /// row before it, and nothing else: no failure, no second success.
    @Test(arguments: StoreKind.testable)
    func aRightPINEndsWithItsReservationAndItsSuccess(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        let alice = try await h.pinUser("alice", pin: "739154")
        let before = try await h.auditRows().count
        _ = try await h.service.signIn(username: "alice", pin: "739154", source: .inProcess)
        let rows = Array(try await h.auditRows().dropFirst(before))
        #expect(rows.map { "\($0.kind) \($0.outcome) \($0.reason ?? "-")" } == ["sign_in pending pin_checked", "sign_in success -"], "\(rows)")
        let actor = try await pseudonym(h, alice.userId)
        #expect(rows.allSatisfy { $0.actor == actor && $0.method == AuthMethod.pin })
        let attempt = try #require(rows.first?.attempt)
        #expect(attempt.utf8.count == 32 && rows.allSatisfy { $0.attempt == attempt }, "\(rows)")
        #expect(try await h.integers(Self.unsettled).isEmpty)
    }

    /// A wrong PIN and an unknown username write the same rows (a `pending` reservation, then a failure) in the
    /// same number of writes: the audit log's new row does not tell them apart by cost.
    @Test(arguments: StoreKind.testable)
    func aKnownAndAnUnknownUsernameWriteTheSameRowsInTheSameWrites(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        _ = try await h.pinUser("alice", pin: "739154")
        let before = try await h.auditRows().count
        let (service, store) = try h.serviceFailingWrites { _ in false }
        _ = await outcomeCode { try await service.signIn(username: "alice", pin: "846213", source: ClientSource("a")) }
        let knownWrites = store.writes
        let known = Array(try await h.auditRows().dropFirst(before))
        _ = await outcomeCode { try await service.signIn(username: "nobody", pin: "846213", source: ClientSource("b")) }
        let unknownWrites = store.writes - knownWrites
        let unknown = Array(try await h.auditRows().dropFirst(before + known.count))
        #expect(knownWrites == unknownWrites)
        #expect(known.map { "\($0.kind) \($0.outcome)" } == ["sign_in pending", "sign_in failure"])
        #expect(unknown.map { "\($0.kind) \($0.outcome)" } == known.map { "\($0.kind) \($0.outcome)" })
        #expect(known.map(\.reason) == ["pin_checked", "wrong_pin"] && unknown.map(\.reason) == ["pin_checked", "unknown_user"])
        for rows in [known, unknown] { #expect(rows.count == 2 && rows[0].attempt != nil && rows[0].attempt == rows[1].attempt, "\(rows)") }
        #expect(known.first?.attempt != unknown.first?.attempt)
    }

    /// The lockout a wrong PIN causes belongs to that attempt.
    @Test(arguments: StoreKind.testable)
    func aLockoutIsLinkedToTheAttemptThatCausedIt(kind: StoreKind) async throws {
        let h = try await Harness(kind) { $0.pin.lockoutThreshold = 4 }
        _ = try await h.pinUser("alice", pin: "739154")
        for attempt in 1...h.service.configuration.pin.effectiveLockoutThreshold {
            #expect(await outcomeCode { try await h.service.signIn(username: "alice", pin: String(format: "%06d", attempt), source: .inProcess) } == "invalid_credentials")
            h.clock.advance(h.service.configuration.pin.delay(afterFailures: attempt))
        }
        let rows = try await h.auditRows()
        let lockout = try #require(rows.first { $0.kind == AuditKind.pinLockout.rawValue })
        let linked = rows.filter { $0.attempt != nil && $0.attempt == lockout.attempt }.map { "\($0.kind) \($0.outcome) \($0.reason ?? "-")" }
        #expect(linked.count == 3 && linked.prefix(2) == ["sign_in pending pin_checked", "sign_in failure wrong_pin"], "\(linked)")
    }

    /// An erasure drops the links (a deleted user's rows must not link to each other), and only an erasure may:
    /// changing or clearing a live row's `attempt` is refused like any other change to the log.
    @Test(arguments: StoreKind.testable)
    func anAttemptLinkIsAppendOnlyUntilTheUserIsErased(kind: StoreKind) async throws {
        let h = try await Harness(kind)
        let alice = try await h.pinUser("alice", pin: "739154")
        _ = try await h.service.verifyPIN(accessToken: alice.accessToken, pin: "739154")
        for sql in [#"UPDATE "auditEvent" SET "attempt" = 'x' WHERE "attempt" IS NOT NULL"#, #"UPDATE "auditEvent" SET "attempt" = NULL"#] {
            await #expect(throws: (any Error).self, "\(sql)") { try await h.execute(sql) }
        }
        #expect(try await h.auditRows().filter { $0.attempt != nil }.count == 2)
        try await h.service.deleteAccount(accessToken: alice.accessToken)
        let rows = try await h.auditRows()
        #expect(rows.contains { $0.kind == AuditKind.pinVerify.rawValue && $0.outcome == "pending" })
        #expect(rows.allSatisfy { $0.attempt == nil }, "\(rows)")
    }
}

extension Harness {
    /// A service over this harness's database whose writes numbered in `failing` (1 is the first write through it)
    /// fail with `storage_unavailable`, as a store under load would; and that store, to count its writes.
    func serviceFailingWrites(_ failing: @escaping @Sendable (Int) -> Bool) throws -> (IdentityService, FailingWritesStore) {
        let base: any IdentityStore
        switch kind {
        case .sqlite: base = SQLiteStore(database)
        case .postgres: base = try #require(postgres)
        }
        let store = FailingWritesStore(base: base, failing: failing)
        return (IdentityService(store: store, configuration: service.configuration, jwksFetcher: fetcher, now: clock.source), store)
    }
}

/// A store whose writes (numbered from 1, in the order they start) fail with `storage_unavailable` where `failing`
/// says so, before their body runs: the deadline or outage of a loaded store, on SQLite and PostgreSQL alike.
final class FailingWritesStore: IdentityStore {
    let base: any IdentityStore
    let failing: @Sendable (Int) -> Bool
    private let started = Mutex(0)

    init(base: any IdentityStore, failing: @escaping @Sendable (Int) -> Bool) {
        self.base = base
        self.failing = failing
    }

    /// How many writes were started through this store (failed ones included).
    var writes: Int { started.withLock { $0 } }

    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        try await base.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let number = started.withLock { n in
            n += 1
            return n
        }
        if failing(number) { throw IdentityError.unavailable("injected: write \(number) refused") }
        return try await base.write(body)
    }

    func flushErasures() async throws { try await base.flushErasures() }
}
