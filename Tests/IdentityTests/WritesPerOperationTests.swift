import AppStoreTestSupport
import Foundation
import PolicyEngine
import PolicyModel
import Synchronization
import Testing

@testable import Identity

/// What each identity operation asks of the store: its transactions and the rows it writes. These counts are the
/// capacity model's inputs (docs/scaling.md: a PostgreSQL primary's load is its write transactions and row writes),
/// pinned here so that a change that adds a write to sign-in, refresh, a purchase or a decision record shows up in a
/// review and in the model. Both stores run the same service code, so the counts are the same on each (checked).
@Suite(.storeScope) struct WritesPerOperationTests {
    static let bundleId = "com.example.gatehouse"
    static let product = "com.example.pro.monthly"

    @Test(arguments: StoreKind.testable) func eachOperationWritesWhatTheCapacityModelSays(store: StoreKind) async throws {
        let ca = try AppStoreTestCA(now: TestClock().now)
        let counting = CountingStore.Tally()
        let h = try await Harness(
            store,
            configure: { config in
                config.appStore.bundleIds = [Self.bundleId]
                try! config.appStore.addRootCertificate(ca.rootDER)
            },
            wrapStore: { CountingStore(base: $0, tally: counting) })
        func measure(_ operation: () async throws -> Void) async throws -> StoreWork {
            counting.reset()
            try await operation()
            return counting.work
        }

        var tokens = try await h.service.signInAnonymously(source: .inProcess)
        let anonymous = try await measure { _ = try await h.service.signInAnonymously(source: .inProcess) }
        let register = try await measure { tokens = try await h.service.register(username: "ada", pin: "4829", source: .inProcess) }
        let signIn = try await measure { tokens = try await h.service.signIn(username: "ada", pin: "4829", source: .inProcess) }
        let validate = try await measure { _ = try await h.service.validate(accessToken: tokens.accessToken) }
        let refresh = try await measure { tokens = try await h.service.refresh(refreshToken: tokens.refreshToken) }
        let jws = ca.sign(
            AppStoreTestCA.transaction(
                bundleId: Self.bundleId, productId: Self.product, signedAt: h.clock.now, expiresAt: h.clock.now.addingTimeInterval(86400)))
        let purchase = try await measure {
            _ = try await h.service.recordPurchase(accessToken: tokens.accessToken, signedTransaction: jws, productTiers: [Self.product: "pro"])
        }
        let user = try await h.service.validate(accessToken: tokens.accessToken).userId
        let drafts = (0..<100).map { i in
            DecisionRecordDraft(
                request: Request(subject: Subject(id: user, tier: "pro"), action: "view", resource: Resource(type: "doc", id: "d\(i)")),
                effect: "allow", reason: "allowed", policyHash: "sha256:0", policyLocation: nil, fromSession: true)
        }
        _ = try await h.service.decisionPseudonyms()
        let records = try await measure { try await h.service.writeDecisionRecords(drafts) }
        let signOut = try await measure { try await h.service.signOut(accessToken: tokens.accessToken) }

        // Each line: write transactions, rows written (inserts, updates, upserts, deletes, audit appends), read transactions.
        #expect(anonymous == StoreWork(writes: 1, rows: 6, reads: 0), "anonymous sign-in: \(anonymous)")
        #expect(register == StoreWork(writes: 2, rows: 7, reads: 0), "PIN registration: \(register)")
        #expect(signIn == StoreWork(writes: 2, rows: 8, reads: 0), "PIN sign-in: \(signIn)")
        #expect(validate == StoreWork(writes: 0, rows: 0, reads: 1), "a bearer's session read (a cache miss): \(validate)")
        #expect(refresh == StoreWork(writes: 1, rows: 3, reads: 0), "refresh: \(refresh)")
        #expect(purchase == StoreWork(writes: 1, rows: 3, reads: 1), "purchase: \(purchase)")
        #expect(records == StoreWork(writes: 1, rows: 100, reads: 0), "100 decision records, one batch: \(records)")
        #expect(signOut == StoreWork(writes: 1, rows: 2, reads: 0), "sign-out: \(signOut)")
    }

    /// A batch's users are looked up in one statement, whatever their number: one lookup per user was a round trip
    /// each on PostgreSQL, inside the batch's transaction, and with a thousand users deciding at once the writer wrote
    /// about 1,000 records a second and dropped the rest (queue_full). The actors are still each user's own pseudonym,
    /// none for an id no user has.
    @Test(arguments: StoreKind.testable) func aBatchLooksItsUsersUpInOneStatement(store: StoreKind) async throws {
        let counting = CountingStore.Tally()
        let h = try await Harness(store, wrapStore: { CountingStore(base: $0, tally: counting) })
        var users: [String] = []
        for _ in 0..<30 {
            let tokens = try await h.service.signInAnonymously(source: ClientSource(UUID().uuidString))
            users.append(try await h.service.validate(accessToken: tokens.accessToken).userId)
        }
        // A caller-named id may hold U+0000 (PostgreSQL refuses it as a parameter): no user's, never looked up.
        let ids = users + (0..<9).map { "not-a-user-\($0)" } + ["nul\u{0}id"]
        let drafts = (0..<100).map { i in
            DecisionRecordDraft(
                request: Request(subject: Subject(id: ids[i % ids.count], tier: "pro"), action: "view", resource: Resource(type: "doc", id: "d\(i)")),
                effect: "allow", reason: "allowed", policyHash: "sha256:0", policyLocation: nil, fromSession: false)
        }
        _ = try await h.service.decisionPseudonyms()
        counting.reset()
        try await h.service.writeDecisionRecords(drafts)
        #expect(counting.work.lookups == 1, "lookups in the batch's transaction: \(counting.work.lookups)")
        let pseudonyms = Dictionary(uniqueKeysWithValues: try await h.service.store.read { tx in try await tx.fetchAll(UserRow.self, [:]) }.map { ($0.id, $0.pseudonym) })
        let rows = try await h.service.store.read { tx in try await tx.fetchAll(DecisionLogRow.self, [:]) }.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
        #expect(rows.count == 100)
        for (i, row) in rows.enumerated() {
            #expect(row.actor == pseudonyms[ids[i % ids.count]], "record \(i)")
        }
    }
}

/// Transactions and row writes, as the store saw them.
struct StoreWork: Equatable, CustomStringConvertible {
    var writes = 0
    var rows = 0
    var reads = 0
    /// Statements that read rows inside a transaction (`fetchOne`, `fetchAll`, `fetch`, `fetchSelected`); not compared.
    var lookups = 0
    /// Each row write as "insert session", in order (not compared: the counts are the contract, this says what they are).
    var detail: [String] = []
    var description: String { "\(writes) write transaction(s), \(rows) row write(s), \(reads) read(s): \(detail.joined(separator: ", "))" }
    static func == (a: StoreWork, b: StoreWork) -> Bool { (a.writes, a.rows, a.reads) == (b.writes, b.rows, b.reads) }
}

/// A store that counts what passes through it to `base`, which does the work. The store's own one-statement forms
/// (`countInWindow`, `decisionRows`, `readOne`) go to the base's, so PostgreSQL still counts in one statement.
final class CountingStore: IdentityStore, FactChangeRelay {
    final class Tally: Sendable {
        private let state = Mutex(StoreWork())
        func reset() { state.withLock { $0 = StoreWork() } }
        var work: StoreWork { state.withLock { $0 } }
        func add(writes: Int = 0, rows: Int = 0, reads: Int = 0, lookups: Int = 0, _ what: String? = nil) {
            state.withLock {
                $0.lookups += lookups
                $0.writes += writes
                $0.rows += rows
                $0.reads += reads
                if let what { $0.detail.append(rows == 1 ? what : "\(what) ×\(rows)") }
            }
        }
    }

    let base: any IdentityStore
    let tally: Tally

    init(base: any IdentityStore, tally: Tally) {
        self.base = base
        self.tally = tally
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        tally.add(reads: 1)
        return try await base.read { [tally] tx in try await body(CountingTransaction(base: tx, tally: tally)) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        tally.add(writes: 1)
        return try await base.write { [tally] tx in try await body(CountingTransaction(base: tx, tally: tally)) }
    }

    func flushErasures() async throws { try await base.flushErasures() }
    func flushErasuresReportingSkipped() async throws -> [String] { try await base.flushErasuresReportingSkipped() }

    func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow {
        tally.add(writes: 1, rows: 1, "upsert guessLimit")
        return try await base.countInWindow(scope, window: window, at: t)
    }

    func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        tally.add(reads: 1)
        return try await base.decisionRows(accessTokenHash: accessTokenHash, resourceId: resourceId)
    }

    func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        tally.add(reads: 1)
        return try await base.readOne(body)
    }

    func relay(into changes: FactChanges) { (base as? any FactChangeRelay)?.relay(into: changes) }
}

/// A transaction that counts row writes and passes everything to `base`.
final class CountingTransaction: IdentityTransaction, BatchInserting {
    let base: any IdentityTransaction
    let tally: CountingStore.Tally

    init(base: any IdentityTransaction, tally: CountingStore.Tally) {
        self.base = base
        self.tally = tally
    }

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        tally.add(lookups: 1)
        return try await base.fetchOne(type, conditions)
    }
    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        tally.add(lookups: 1)
        return try await base.fetchSelected(type, conditions)
    }
    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] {
        tally.add(lookups: 1)
        return try await base.fetchAll(type, conditions)
    }
    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] {
        tally.add(lookups: 1)
        return try await base.fetch(read)
    }
    var placeholders: SQLPlaceholders { base.placeholders }
    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] { try await base.fetchIds(sql, bindings) }
    func afterCommit(_ action: @escaping @Sendable () -> Void) { base.afterCommit(action) }
    func announce(_ changes: Set<FactChange>) async throws { try await base.announce(changes) }

    func insert<R: StoredRow>(_ row: R) async throws {
        tally.add(rows: 1, "insert \(R.table)")
        try await base.insert(row)
    }
    func update<R: StoredRow>(_ row: R) async throws {
        tally.add(rows: 1, "update \(R.table)")
        try await base.update(row)
    }
    func upsert<R: StoredRow>(_ row: R) async throws {
        tally.add(rows: 1, "upsert \(R.table)")
        try await base.upsert(row)
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int {
        let deleted = try await base.deleteAll(type, conditions)
        tally.add(rows: deleted, "delete \(R.table)")
        return deleted
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int {
        let deleted = try await base.deleteAll(type, column, before: date)
        tally.add(rows: deleted, "delete \(R.table)")
        return deleted
    }
    func append(_ event: AuditEventRow) async throws {
        tally.add(rows: 1, "append auditEvent (\(event.kind))")
        try await base.append(event)
    }
    func erase(actor pseudonym: String) async throws -> Int {
        let changed = try await base.erase(actor: pseudonym)
        tally.add(rows: changed, "erase")
        return changed
    }
    func insertBatch<R: StoredRow>(_ rows: [R]) async throws {
        tally.add(rows: rows.count, "insert \(R.table)")
        try await base.insertAll(rows)
    }
}
