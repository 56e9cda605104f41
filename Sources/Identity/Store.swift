import Foundation
import PolicyEngine
import Synchronization

/// Where identity data lives. Service logic runs inside `read`/`write` transactions of a store,
/// so it is written once for SQLite (`SQLiteStore`) and PostgreSQL (`PostgresStore`, in the
/// `IdentityPostgres` target).
///
/// Bodies and transaction operations are `async`: a network database answers each statement
/// asynchronously. A `write` body runs in one transaction that is rolled back if the body throws,
/// and writes are serializable: SQLite has one writer; PostgreSQL runs them at `SERIALIZABLE` and
/// may run the body again from scratch after a serialization failure. So a body changes nothing
/// outside the database itself: an in-memory effect (a metric counter, the refusal-audit coalescing
/// mark) goes through `IdentityTransaction.afterCommit`, which the store runs once, after `COMMIT`
/// succeeds, and drops when the transaction rolls back or its body is run again. A body must not
/// open another transaction of the same store (SQLite's one writer would wait for itself).
package protocol IdentityStore: Sendable {
    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T
    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T
    /// Makes erased data unrecoverable from the store's files (SQLite: checkpoint and truncate the
    /// WAL; PostgreSQL: `VACUUM` the tables the erasure touched).
    func flushErasures() async throws
    /// As `flushErasures`, returning the tables whose cleanup was skipped (PostgreSQL: a role that does
    /// not own them may not VACUUM them); empty when nothing was skipped.
    func flushErasuresReportingSkipped() async throws -> [String]
    /// Adds one to the fixed window `scope` (a `guessLimit` row) in a short transaction of its own, never
    /// inside a body; returns the row after counting. A window starts at the first count, restarts once
    /// `window` seconds have passed, and never moves back. PostgreSQL counts in one atomic statement, so
    /// concurrent counts on any number of replicas queue on the row instead of aborting each other.
    func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow
    /// The rows a decision reads (`DecisionRows`), from one snapshot, each part only when its key is given: the session
    /// whose access token hashes to `accessTokenHash` with its user's facts, and the resource `resourceId`. PostgreSQL
    /// reads them in one statement (one round trip, no `BEGIN`/`COMMIT`); the default reads them in one `read`.
    func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows
    /// Runs `body`, which reads with one statement (one `fetchOne` or `fetchAll`), as `read` does. PostgreSQL sends
    /// it alone, without `BEGIN`/`COMMIT` (one statement sees one snapshot by itself): one round trip instead of
    /// three. On every store a second operation, or a write, fails the read (`storage`): a body that needs two
    /// statements needs `read`'s snapshot.
    func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T
}

extension IdentityStore {
    package func flushErasuresReportingSkipped() async throws -> [String] {
        try await flushErasures()
        return []
    }

    package func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow {
        try await write { tx in
            let row = GuessLimitRow.counting(try await tx.fetchOne(GuessLimitRow.self, "scope", .text(scope)), scope: scope, window: window, at: t)
            try await tx.upsert(row)
            return row
        }
    }

    package func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        try await read { tx in try await DecisionRows.read(tx, accessTokenHash: accessTokenHash, resourceId: resourceId) }
    }

    package func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        try await read { tx in try await body(OneStatementTransaction(base: tx)) }
    }
}

/// A transaction that allows one read statement (`readOne`'s): a second operation or any write is a storage error,
/// the same on every store, so a body that outgrows `readOne` fails in every test rather than only on PostgreSQL.
package final class OneStatementTransaction: IdentityTransaction {
    private let base: any IdentityTransaction
    private let used = Mutex(false)

    package init(base: any IdentityTransaction) { self.base = base }

    private func take() throws {
        let again = used.withLock { used in
            defer { used = true }
            return used
        }
        if again { throw IdentityError(.storage, field: "database", "a one-statement read ran a second statement") }
    }

    private static func refused() -> IdentityError { IdentityError(.storage, field: "database", "a one-statement read cannot write") }

    package func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try take()
        return try await base.fetchOne(type, conditions)
    }
    package func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] {
        try take()
        return try await base.fetchAll(type, conditions)
    }
    package func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try take()
        return try await base.fetchSelected(type, conditions)
    }
    package func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] {
        try take()
        return try await base.fetch(read)
    }
    package var placeholders: SQLPlaceholders { base.placeholders }
    package func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] {
        try take()
        return try await base.fetchIds(sql, bindings)
    }
    package func insert<R: StoredRow>(_ row: R) async throws { throw Self.refused() }
    package func update<R: StoredRow>(_ row: R) async throws { throw Self.refused() }
    package func upsert<R: StoredRow>(_ row: R) async throws { throw Self.refused() }
    package func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int { throw Self.refused() }
    package func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int { throw Self.refused() }
    package func append(_ event: AuditEventRow) async throws { throw Self.refused() }
    package func erase(actor pseudonym: String) async throws -> Int { throw Self.refused() }
    package func afterCommit(_ action: @escaping @Sendable () -> Void) { base.afterCommit(action) }
    package func announce(_ changes: Set<FactChange>) async throws { throw Self.refused() }
}

extension GuessLimitRow {
    /// `current` (nil: no row yet) with one more count at `t`: in its window while `t` is before the window's
    /// end (also when `t` is before its start: a clock behind, or an out-of-order commit, never moves a
    /// window back), else a new window starting at `t`.
    package static func counting(_ current: GuessLimitRow?, scope: String, window: TimeInterval, at t: Date) -> GuessLimitRow {
        if var row = current, t < row.windowStart.addingTimeInterval(window) {
            row.failures += 1
            return row
        }
        return GuessLimitRow(scope: scope, windowStart: t, failures: 1)
    }
}

/// A value in a column comparison.
package enum StoreValue: Sendable, Hashable {
    case text(String)
    case blob(Data)
    case int(Int)
    case date(Date)
}

/// A row type the store persists: a table name, a primary key and `Codable` columns.
package protocol StoredRow: Codable, Sendable {
    static var table: String { get }
    /// Primary-key columns, in key order.
    static var primaryKey: [String] { get }
}

/// Some of a table's columns, read by naming each (never `*`) and never written: a column the table gains later, or
/// one the reader has no business with (a secret), is not read through it.
package protocol ColumnSelection: Decodable, Sendable {
    static var table: String { get }
    /// The columns the `SELECT` names: exactly the type's coding keys.
    static var columns: [String] { get }
}

/// The operations service code may perform on a store inside one transaction.
package protocol IdentityTransaction: Sendable {
    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R?
    /// The first row matching every condition, reading only `R.columns`.
    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R?
    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R]
    /// The rows `read` describes (its filter, order and limit), decoded as `R`: one `SELECT` on every store.
    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R]
    func insert<R: StoredRow>(_ row: R) async throws
    /// Updates the row with the same primary key; throws if there is none.
    func update<R: StoredRow>(_ row: R) async throws
    func upsert<R: StoredRow>(_ row: R) async throws
    /// Deletes the rows matching every condition; returns how many went.
    @discardableResult func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int
    /// Deletes the rows whose date `column` is before `date`; returns how many went.
    @discardableResult func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int
    /// How this store's SQL writes a bound value's placeholder: `?` (SQLite) or `$n` (PostgreSQL).
    var placeholders: SQLPlaceholders { get }
    /// The first column, as text, of the rows of one `SELECT` the identity layer wrote over its own tables (the
    /// resource lists), its values bound in placeholder order, never written into `sql`. Nothing else may call it.
    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String]
    /// Appends to the audit log (which refuses updates and deletes).
    func append(_ event: AuditEventRow) async throws
    /// Gives every audit and decision row of a deleted user's pseudonym its own random pseudonym and
    /// drops the decisions' resource ids, subject pseudonyms and recorded facts and the audit rows' PIN-attempt links,
    /// so the rows no longer link to each other, to resources or to what was decided.
    /// Returns how many rows changed.
    @discardableResult func erase(actor pseudonym: String) async throws -> Int
    /// Runs `action` once after this transaction commits; never if it rolls back, nor for a run of the
    /// body that a serialization failure ended (PostgreSQL runs the body again with a new transaction).
    /// For effects outside the database: a body must not change in-memory state directly.
    func afterCommit(_ action: @escaping @Sendable () -> Void)
    /// Tells other processes sharing the store, inside this transaction, which decision facts it changes (PostgreSQL:
    /// `NOTIFY`, delivered only if the transaction commits). SQLite has one writing process: nothing to tell.
    func announce(_ changes: Set<FactChange>) async throws
}

extension IdentityTransaction {
    package func announce(_ changes: Set<FactChange>) async throws {}

    /// Inserts `rows` in order: one statement each. SQLite overrides it to run them all in one hop to its writer
    /// thread (a batch of decision records).
    package func insertAll<R: StoredRow>(_ rows: [R]) async throws {
        if let batching = self as? any BatchInserting {
            try await batching.insertBatch(rows)
            return
        }
        for row in rows { try await insert(row) }
    }
}

/// A transaction that inserts many rows in one operation.
package protocol BatchInserting: Sendable {
    func insertBatch<R: StoredRow>(_ rows: [R]) async throws
}

/// The actions a transaction's body deferred to its commit (`IdentityTransaction.afterCommit`):
/// one list per run of a body, run by the store after `COMMIT` succeeded, else dropped with the run.
package final class AfterCommitActions: Sendable {
    private let actions = Mutex<[@Sendable () -> Void]>([])

    package init() {}

    /// Defers `action` to the commit.
    package func add(_ action: @escaping @Sendable () -> Void) {
        actions.withLock { $0.append(action) }
    }

    /// Runs every deferred action once, in the order the body deferred them; call after `COMMIT` succeeded.
    package func runAfterCommit() {
        let deferred = actions.withLock { list in
            defer { list = [] }
            return list
        }
        for action in deferred { action() }
    }
}

extension IdentityTransaction {
    package func fetchOne<R: StoredRow>(_ type: R.Type, _ column: String, _ value: StoreValue) async throws -> R? {
        try await fetchOne(type, [column: value])
    }
    package func fetchAll<R: StoredRow>(_ type: R.Type, _ column: String, _ value: StoreValue) async throws -> [R] {
        try await fetchAll(type, [column: value])
    }
}
