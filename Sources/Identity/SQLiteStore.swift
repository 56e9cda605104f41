import Foundation
import GRDB
import GRDBSQLite
import PolicyEngine
import Synchronization

/// The SQLite form of `IdentityStore`, on an `AppDatabase`'s pool.
///
/// GRDB's transactions take a synchronous closure, and the store's bodies are `async`. Each `read`
/// or `write` therefore opens one ordinary GRDB access (`pool.read`, `pool.write`) whose closure
/// serves the body's operations one by one from a `SQLiteChannel` until the body returns (commit)
/// or throws (the closure throws, so GRDB rolls back). The access holds GRDB's writer for the whole
/// body, so writes stay serializable (one writer, `synchronous = FULL`), and a read body sees one
/// snapshot. The closure blocks one of GRDB's dispatch threads, never a Swift concurrency thread.
public struct SQLiteStore: IdentityStore {
    /// The database the store reads and writes.
    public let database: AppDatabase

    /// A store over `database`, which `AppDatabase.init(path:)` has already opened and migrated.
    public init(_ database: AppDatabase) {
        self.database = database
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let pool = database.pool
        return try await run(body) { channel in try await pool.read { db in try channel.serve(db) } }
    }

    package func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let pool = database.pool
        let ledger = database.ownCommits
        return try await run(body) { channel in
            try await pool.write { db in
                ledger.opened(db)
                let changesBefore = db.totalChangesCount
                try channel.serve(db)
                // A transaction that changed rows is numbered, so the commit probe can tell it from other processes'.
                if db.totalChangesCount != changesBefore { try ledger.number(db) }
            }
        }
    }

    /// One statement in one GRDB read access of its own: no channel and no task holding a connection while the body
    /// runs (a single statement is its own snapshot). The body may run only that statement (`OneStatementTransaction`).
    package func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let actions = AfterCommitActions()
        do {
            let value = try await body(OneStatementTransaction(base: SQLiteTransaction(channel: SQLiteReadAccess(pool: database.pool), actions: actions)))
            actions.runAfterCommit()
            return value
        } catch {
            throw Self.mapped(error)
        }
    }

    package func flushErasures() async throws {
        do {
            let own = database.ownCommits
            try await database.pool.writeWithoutTransaction { db in
                // The commit probe sees a checkpoint as a change of the file: this one is this process's.
                own.checkpointBegan()
                defer { own.checkpointEnded() }
                _ = try db.checkpoint(.truncate)
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Runs `body` against a channel that `access` serves inside one GRDB transaction.
    private func run<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityTransaction) async throws -> T,
        access: @escaping @Sendable (SQLiteChannel) async throws -> Void
    ) async throws -> T {
        let channel = SQLiteChannel()
        let actions = AfterCommitActions()
        // Not a child task: the caller's cancellation must not interrupt a transaction midway.
        let holder = Task {
            defer { channel.close() }
            try await access(channel)
        }
        let value: T
        do {
            value = try await body(SQLiteTransaction(channel: channel, actions: actions))
        } catch {
            channel.finish(commit: false)
            _ = await holder.result
            throw Self.mapped(error)
        }
        channel.finish(commit: true)
        do {
            try await holder.value
        } catch {
            throw Self.mapped(error)
        }
        // Committed (SQLite never runs a body twice; a failed commit threw above and drops them).
        actions.runAfterCommit()
        return value
    }

    /// Passes identity errors through; turns database errors into `storage` errors without SQL or values.
    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        return IdentityError(.storage, field: "database", "SQLite error \(error.resultCode.rawValue)")
    }
}

/// Where a transaction's operations run: a channel into one GRDB access, or (for `readOne`) an access per operation.
protocol SQLiteOperations: Sendable {
    /// Runs `work` on a connection and returns its result.
    func perform<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T
}

/// Each operation in a GRDB read access of its own.
struct SQLiteReadAccess: SQLiteOperations {
    let pool: DatabasePool

    func perform<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read { db in try work(db) }
    }
}

/// Hands a transaction body's operations to the GRDB access that runs them, and their results back.
final class SQLiteChannel: SQLiteOperations, @unchecked Sendable {
    private struct Job {
        let run: (Database) -> Void
        let fail: (any Error) -> Void
    }
    private enum State { case open, finished(commit: Bool), closed }
    /// Thrown inside the access to make GRDB roll back; the caller rethrows the body's own error.
    private struct RolledBack: Error {}

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var state = State.open

    /// Inside the GRDB access: runs jobs in order until the body finishes; throws to roll back.
    func serve(_ db: Database) throws {
        while true {
            condition.lock()
            while jobs.isEmpty, case .open = state { condition.wait() }
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.run(db)
                continue
            }
            let ending = state
            condition.unlock()
            if case .finished(commit: false) = ending { throw RolledBack() }
            return
        }
    }

    /// Runs `work` on the transaction's connection and returns its result.
    func perform<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            condition.lock()
            guard case .open = state else {
                condition.unlock()
                continuation.resume(throwing: IdentityError(.storage, field: "database", "the transaction has ended"))
                return
            }
            jobs.append(Job(run: { db in continuation.resume(with: Result { try work(db) }) }, fail: { continuation.resume(throwing: $0) }))
            condition.signal()
            condition.unlock()
        }
    }

    /// The body is done: the access commits (or rolls back) and returns.
    func finish(commit: Bool) {
        condition.lock()
        if case .open = state { state = .finished(commit: commit) }
        condition.signal()
        condition.unlock()
    }

    /// The access has ended, or never started (it could not begin): jobs still queued fail.
    func close() {
        condition.lock()
        let pending = jobs
        jobs = []
        state = .closed
        condition.unlock()
        for job in pending { job.fail(IdentityError(.storage, field: "database", "the transaction has ended")) }
    }
}

/// The store's operations inside one SQLite transaction, each run on the access's connection.
struct SQLiteTransaction: IdentityTransaction {
    let channel: any SQLiteOperations
    let actions: AfterCommitActions

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try await channel.perform { db in try SQLiteStatements(db: db).fetchAll(type, conditions).first }
    }
    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] {
        try await channel.perform { db in try SQLiteStatements(db: db).fetchAll(type, conditions) }
    }
    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] {
        let (sql, values) = read.sql(placeholders: .questionMarks)
        return try await channel.perform { db in
            try Row.fetchAll(db.cachedStatement(sql: sql), arguments: SQLiteStatements.arguments(values)).map { try RowBox<R>(row: $0).value }
        }
    }
    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try await channel.perform { db in try SQLiteStatements(db: db).fetchSelected(type, conditions) }
    }
    func insert<R: StoredRow>(_ row: R) async throws {
        try await channel.perform { db in try RowBox(row).insert(db) }
    }
    func update<R: StoredRow>(_ row: R) async throws {
        try await channel.perform { db in try RowBox(row).update(db) }
    }
    func upsert<R: StoredRow>(_ row: R) async throws {
        try await channel.perform { db in try RowBox(row).save(db) }
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int {
        try await channel.perform { db in try SQLiteStatements(db: db).deleteAll(type, conditions) }
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int {
        try await channel.perform { db in try SQLiteStatements(db: db).deleteAll(type, column, before: date) }
    }
    func append(_ event: AuditEventRow) async throws {
        var event = event
        event.id = nil
        try await insert(event)
    }
    var placeholders: SQLPlaceholders { .questionMarks }
    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] {
        try await channel.perform { db in
            // Cached per connection: a list's pages share one SQL text (values are bound), so only the first is prepared.
            let statement = try db.cachedStatement(sql: sql)
            try statement.setArguments(StatementArguments(bindings))
            return try Self.firstColumnTexts(statement, db)
        }
    }

    /// Every row's first column as text, stepped through SQLite's C API. GRDB's `String.fetchAll` read the same rows
    /// through its cursor at about 1,000 instructions a row besides SQLite's own (callgrind, `scripts/list-http-load.py
    /// --callgrind`), a quarter of a 1,000-id list page. A NULL is refused as `String.fetchAll` refuses it.
    static func firstColumnTexts(_ statement: Statement, _ db: Database) throws -> [String] {
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        var texts: [String] = []
        while true {
            let step = sqlite3_step(handle)
            if step == SQLITE_DONE { return texts }
            guard step == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: step), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
            }
            guard let text = sqlite3_column_text(handle, 0) else {
                throw DatabaseError(resultCode: .SQLITE_MISMATCH, message: "could not read a NULL as a String", sql: statement.sql)
            }
            texts.append(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, 0))), as: UTF8.self))
        }
    }
    func erase(actor pseudonym: String) async throws -> Int {
        try await channel.perform { db in try SQLiteStatements(db: db).erase(actor: pseudonym) }
    }
    func afterCommit(_ action: @escaping @Sendable () -> Void) {
        actions.add(action)
    }
}

/// The SQL of the store's operations, run synchronously on a GRDB connection.
struct SQLiteStatements {
    let db: Database

    private func whereClause(_ conditions: [String: StoreValue]) -> (String, StatementArguments) {
        guard !conditions.isEmpty else { return ("", StatementArguments()) }
        let keys = conditions.keys.sorted()
        let sql = " WHERE " + keys.map { "\"\($0)\" = ?" }.joined(separator: " AND ")
        return (sql, Self.arguments(keys.map { conditions[$0]! }))
    }

    /// `values` bound in order.
    static func arguments(_ values: [StoreValue]) -> StatementArguments {
        StatementArguments(values.map { value -> (any DatabaseValueConvertible)? in
            switch value {
            case .text(let s): s
            case .blob(let d): d
            case .int(let i): i
            case .date(let d): d
            }
        })
    }

    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) throws -> [R] {
        let (clause, args) = whereClause(conditions)
        return try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM \"\(R.table)\"" + clause), arguments: args).map {
            try RowBox<R>.init(row: $0).value
        }
    }

    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) throws -> R? {
        let (clause, args) = whereClause(conditions)
        let columns = R.columns.map { "\"\($0)\"" }.joined(separator: ", ")
        return try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM \"\(R.table)\"" + clause + " LIMIT 1"), arguments: args).map {
            try SelectionBox<R>(row: $0).value
        }
    }

    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) throws -> Int {
        precondition(!conditions.isEmpty, "deleteAll needs at least one condition")
        let (clause, args) = whereClause(conditions)
        try db.execute(sql: "DELETE FROM \"\(R.table)\"" + clause, arguments: args)
        return db.changesCount
    }

    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) throws -> Int {
        try db.execute(sql: "DELETE FROM \"\(R.table)\" WHERE \"\(column)\" < ?", arguments: [date])
        return db.changesCount
    }

    func erase(actor pseudonym: String) throws -> Int {
        try db.execute(sql: "INSERT INTO erasure (pseudonym) VALUES (?)", arguments: [pseudonym])
        try db.execute(sql: "UPDATE auditEvent SET actor = 'erased-' || lower(hex(randomblob(12))), attempt = NULL WHERE actor = ?", arguments: [pseudonym])
        var changed = db.changesCount
        try db.execute(
            sql: "UPDATE decisionLog SET actor = 'erased-' || lower(hex(randomblob(12))), resourceId = NULL, subject = NULL, facts = NULL WHERE actor = ?", arguments: [pseudonym])
        changed += db.changesCount
        try db.execute(sql: "DELETE FROM erasure WHERE pseudonym = ?", arguments: [pseudonym])
        return changed
    }
}

/// Adapts any `StoredRow` to GRDB's record protocols.
struct RowBox<R: StoredRow>: Codable, FetchableRecord, PersistableRecord {
    var value: R
    init(_ value: R) { self.value = value }

    static var databaseTableName: String { R.table }
    static var databasePrimaryKey: [String] { R.primaryKey }

    init(from decoder: any Decoder) throws { value = try R(from: decoder) }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// Adapts a `ColumnSelection` to GRDB's fetching.
struct SelectionBox<R: ColumnSelection>: Decodable, FetchableRecord {
    var value: R
    init(from decoder: any Decoder) throws { value = try R(from: decoder) }
}

extension SQLiteStore: FactChangeRelay {
    /// Several servers on one machine may share the file (WAL), and SQLite tells no one of a commit: the cache looks
    /// at `PRAGMA data_version` on a connection of its own before it trusts an entry, and any commit by another process
    /// drops every cached fact. So a decision that starts after another process acknowledged a write never sees what
    /// it replaced. This process's own writes drop exactly the facts they changed, before they return, and are told
    /// apart from other processes' by the number each writing transaction gives the file (`OwnCommits`): without it,
    /// every commit of this process (a batch of decision records, a sign-in, a session's last-seen time) dropped every
    /// cached fact, and a bearer's decisions with every decision recorded read the store each time.
    package func relay(into changes: FactChanges) {
        guard let probe = try? SQLiteCommitProbe(path: database.pool.path, ownCommits: database.ownCommits) else {
            // Without a probe nothing is trusted past the staleness bound.
            changes.relay(up: false)
            return
        }
        changes.watch { probe.changedSinceLastLook() }
    }
}

/// A connection of its own on a SQLite file, asking `PRAGMA data_version`: a number that changes whenever another
/// connection (of any process) commits. Reading it touches only the WAL index in shared memory. The connection is
/// SQLite's own C handle behind a mutex, not a GRDB queue: it is asked before every cached decision, and a dispatch
/// queue's `sync` would park the caller's thread whenever two decisions asked at once.
final class SQLiteCommitProbe: Sendable {
    private struct Handle: @unchecked Sendable {
        var connection: OpaquePointer?
        var statement: OpaquePointer?
        /// `PRAGMA user_version`: the number of the last numbered commit (`OwnCommits`).
        var numberStatement: OpaquePointer?
        var last: Int64?
        var lastNumber: Int32 = 0
    }
    private let handle: Mutex<Handle>
    private let ownCommits: OwnCommits

    init(path: String, ownCommits: OwnCommits) throws {
        self.ownCommits = ownCommits
        var connection: OpaquePointer?
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            sqlite3_close(connection)
            throw IdentityError.unavailable("cannot open the database to watch for other processes' commits")
        }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK else {
            sqlite3_close(connection)
            throw IdentityError.unavailable("cannot prepare PRAGMA data_version")
        }
        var numberStatement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, "PRAGMA user_version", -1, &numberStatement, nil) == SQLITE_OK else {
            sqlite3_finalize(statement)
            sqlite3_close(connection)
            throw IdentityError.unavailable("cannot prepare PRAGMA user_version")
        }
        handle = Mutex(Handle(connection: connection, statement: statement, numberStatement: numberStatement, last: nil))
    }

    deinit {
        handle.withLock { h in
            sqlite3_finalize(h.statement)
            sqlite3_finalize(h.numberStatement)
            sqlite3_close(h.connection)
        }
    }

    /// Whether another process committed since the last call (the first call only takes the baseline); a probe that
    /// fails says yes, so nothing stale is trusted.
    ///
    /// A commit was this process's when its number is one `OwnCommits` holds. The file changed but every number
    /// since the last look is this process's: no one else wrote. The file changed and some number is not (another
    /// process's write), or no number moved (a writer that numbers nothing, such as the sqlite3 shell): another process
    /// may have. The last number is this process's own transaction, readable in the instant after its commit and
    /// before it is noted: the look is not counted, and the next one decides. Counting it as another process's (as
    /// this did first) dropped every cached session about ten times a second while decisions were recorded.
    func changedSinceLastLook() -> Bool {
        handle.withLock { h in
            let look = ownCommits.lookBegins()
            defer { sqlite3_reset(h.statement) }
            guard sqlite3_step(h.statement) == SQLITE_ROW else { return true }
            let version = sqlite3_column_int64(h.statement, 0)
            guard let last = h.last else {
                h.last = version
                h.lastNumber = Self.read(h.numberStatement) ?? 0
                return false
            }
            guard last != version else { return false }
            guard let number = Self.read(h.numberStatement) else {
                h.last = version
                return true
            }
            let verdict = ownCommits.consume(after: h.lastNumber, through: number, look: look)
            // Pending: this process's commit is readable but not yet noted; the next look decides (nothing is trusted
            // meanwhile, and nothing dropped: every number before it was this process's).
            guard verdict != .pending else { return false }
            h.last = version
            h.lastNumber = number
            return verdict == .foreign
        }
    }

    private static func read(_ statement: OpaquePointer?) -> Int32? {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
        return sqlite3_column_int(statement, 0)
    }
}

/// The numbers this process gave its own committed write transactions. Each writing transaction of `SQLiteStore`
/// (the only writer of Gatehouse processes once the file is migrated) sets `PRAGMA user_version` to the next number
/// before it commits, and notes the number once committed; the commit probe reads the file's number when SQLite says
/// another connection committed, and counts the commits as this process's own only if every number since its last
/// look is noted here. A number is noted only after its commit: a transaction that rolled back leaves its number free
/// for another process, whose commit must not pass for this one's. This process's WAL checkpoints change the file as a
/// reader sees it too, without a number: the writer runs its automatic ones itself (`checkpointsItself(on:)`) and
/// notes them, as `flushErasures` notes its own.
package final class OwnCommits: Sendable {
    private struct State {
        /// Numbers whose transactions committed, not yet seen by the probe.
        var noted: Set<Int32> = []
        /// Numbers set by transactions that have neither committed nor rolled back yet.
        var inFlight: Set<Int32> = []
        /// Write transactions of this process open now, numbered or not yet.
        var openWrites = 0
        /// The writer is checkpointing the WAL now.
        var checkpointing = false
        /// Checkpoints of this process ended so far.
        var checkpointsEnded: UInt64 = 0
        /// Of those, how many the probe has seen (with a number that moved, or as an unnumbered change).
        var checkpointsSeen: UInt64 = 0
    }
    private let state = Mutex(State())
    /// Noted numbers kept at most; past it the set starts again (the probe then sees one commit as another process's
    /// and drops the cache once: safe, and bounded when nothing looks).
    private static let capacity = 65_536

    /// What the numbers since the probe's last look say about who committed.
    package enum Verdict: Equatable {
        /// Every one is this process's.
        case own
        /// Some may be another process's (or nothing was numbered).
        case foreign
        /// All are this process's, but the last is a transaction of this process still finishing its commit (its
        /// number is readable before it is noted): look again, and decide then.
        case pending
    }

    /// What this process had done when a look of the probe began to read the file.
    package struct Look: Sendable {
        let checkpointsEnded: UInt64
    }

    /// Taken by the probe before it reads the file, and handed to `consume`.
    package func lookBegins() -> Look {
        state.withLock { Look(checkpointsEnded: $0.checkpointsEnded) }
    }

    /// The number after `n` (1 after `Int32.max`: the pragma is a signed 32-bit integer).
    static func next(_ n: Int32) -> Int32 { n >= Int32.max || n < 0 ? 1 : n + 1 }

    /// Counts a write transaction of this process open on `db` until it commits or rolls back. Its number is set at
    /// its end, but SQLite may write its pages to the WAL before (a cache spill, which restarts a checkpointed log), and
    /// a reader sees that as a change with no number moved: with a thousand users' decision records a batch, that
    /// happened about twice a second and each time dropped every cached session.
    func opened(_ db: Database) {
        opened()
        db.afterNextTransaction(onCommit: { [self] _ in closed() }, onRollback: { [self] _ in closed() })
    }

    /// A write transaction of this process began.
    package func opened() {
        state.withLock { $0.openWrites += 1 }
    }

    /// A write transaction counted by `opened` ended.
    package func closed() {
        state.withLock { $0.openWrites -= 1 }
    }

    /// Numbers this writing transaction on `db` and notes the number when it commits.
    func number(_ db: Database) throws {
        let current = try Int32.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let mine = Self.next(current)
        try db.execute(sql: "PRAGMA user_version = \(mine)")
        began(mine)
        db.afterNextTransaction(onCommit: { [self] _ in committed(mine) }, onRollback: { [self] _ in rolledBack(mine) })
    }

    /// SQLite's WAL auto-checkpoint (1,000 frames, its default), run by this process's writer connection `db` itself so
    /// that `consume` knows when the file changed for a checkpoint of its own. Installing a WAL hook replaces SQLite's
    /// automatic one, so this one checkpoints as it did: passively, after the commit that filled the log.
    func checkpointsItself(on db: Database) {
        // The hook keeps this object for the connection's life: one small object per opened database.
        let context = Unmanaged.passRetained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, schema, frames in
                guard let context, frames >= OwnCommits.checkpointFrames else { return SQLITE_OK }
                let own = Unmanaged<OwnCommits>.fromOpaque(context).takeUnretainedValue()
                own.checkpointBegan()
                defer { own.checkpointEnded() }
                // Like SQLite's own hook, a checkpoint that cannot finish now (a reader holds old frames) is not an
                // error: the next commit tries again.
                _ = sqlite3_wal_checkpoint_v2(connection, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                return SQLITE_OK
            }, context)
    }

    /// SQLite's default auto-checkpoint threshold, in WAL frames.
    static let checkpointFrames: CInt = 1000

    /// A checkpoint of this process's begins (the writer's automatic one, or `flushErasures`'): the probe's look waits.
    package func checkpointBegan() {
        state.withLock { $0.checkpointing = true }
    }

    /// That checkpoint ended: the probe's next look counts an unnumbered change as this process's.
    package func checkpointEnded() {
        state.withLock { s in
            s.checkpointing = false
            s.checkpointsEnded += 1
        }
    }

    /// A transaction set `number` and has not finished.
    package func began(_ number: Int32) {
        state.withLock { _ = $0.inFlight.insert(number) }
    }

    /// The transaction that set `number` committed.
    package func committed(_ number: Int32) {
        state.withLock { s in
            s.inFlight.remove(number)
            if s.noted.count >= Self.capacity { s.noted.removeAll(keepingCapacity: true) }
            s.noted.insert(number)
        }
    }

    /// The transaction that set `number` rolled back: the number is free for another process's commit.
    package func rolledBack(_ number: Int32) {
        state.withLock { _ = $0.inFlight.remove(number) }
    }

    /// Whether the numbers after `from` through `to` are this process's; they are forgotten only when the verdict is
    /// `.own`. A number still in flight is never taken for this process's: a rolled-back transaction's number may be
    /// committed next by another process, so the probe waits for the commit to be noted (`.pending`).
    ///
    /// No number moved (`from == to`) but the file changed: a writer that numbers nothing, or this process's own WAL
    /// checkpoint, which SQLite shows readers as a change of `data_version` too (once per checkpoint, measured: the
    /// checkpoint, or the restart of the log by the commit after it). A look during a commit or a checkpoint of this
    /// process waits; an unnumbered change is this process's while a checkpoint of its own has not been seen (`look`,
    /// taken before the look read the file, says which checkpoints a look with moved numbers saw; nil: every one that
    /// has ended). The price is the limit the probe already had: a write that numbers nothing (the sqlite3 shell)
    /// seen around a checkpoint of this process's is taken for this process's.
    package func consume(after from: Int32, through to: Int32, look: Look? = nil) -> Verdict {
        state.withLock { s in
            guard from != to else {
                // A checkpoint running, or a transaction of this process committing: SQLite restarts a checkpointed
                // log when the next commit writes to it, and readers see that as a change before the commit's number.
                // Or the change was the restart of a checkpointed log by this process's next commit, which finished
                // between the probe's two reads: its number, read too early, has been noted since.
                // Or a write transaction of this process is open: its pages may be in the WAL before its number.
                if s.checkpointing || s.openWrites > 0 || !s.inFlight.isEmpty || s.noted.contains(Self.next(to)) { return .pending }
                guard s.checkpointsSeen < s.checkpointsEnded else { return .foreign }
                s.checkpointsSeen = s.checkpointsEnded
                return .own
            }
            // The numbers moved: a checkpoint before this look is seen with them, and excuses nothing after it.
            // Only the checkpoints that ended before the look read the file: one that ended while it was reading (its
            // change not yet read) stays unseen, and excuses the next unnumbered change. Taking every checkpoint as
            // seen here (as this did first) dropped every cached session about twice a second with a thousand users.
            s.checkpointsSeen = max(s.checkpointsSeen, look?.checkpointsEnded ?? s.checkpointsEnded)
            var n = from
            var steps = 0
            repeat {
                n = Self.next(n)
                steps += 1
                guard steps <= Self.capacity else { return .foreign }
                if !s.noted.contains(n) { return n == to && s.inFlight.contains(n) ? .pending : .foreign }
            } while n != to
            n = from
            repeat {
                n = Self.next(n)
                s.noted.remove(n)
            } while n != to
            return .own
        }
    }
}

extension StatementArguments {
    /// A plan's SQL values (`SQLWhere.bindings`) as GRDB binds them, in order.
    package init(_ bindings: [SQLValue]) {
        self.init()
        for value in bindings {
            switch value {
            case .text(let s): self += [s]
            case .int(let i): self += [i]
            case .double(let d): self += [d]
            case .bool(let b): self += [b]
            }
        }
    }
}

extension SQLiteTransaction: BatchInserting {
    /// Every row in one hop to the writer thread, not one per row.
    package func insertBatch<R: StoredRow>(_ rows: [R]) async throws {
        if let records = rows as? [DecisionLogRow] {
            try await channel.perform { db in try DecisionLogRow.insertAll(records, db) }
            return
        }
        try await channel.perform { db in
            for row in rows { try RowBox(row).insert(db) }
        }
    }
}

extension DecisionLogRow {
    /// The decision log's batch, through cached statements with its values bound through SQLite's C API: what a record
    /// costs the writer when every decision is recorded. GRDB's record insert (encoding each row through `Codable` into a
    /// container, then building its statement) was over half of the writer's instructions, and its `execute(arguments:)`
    /// (an array of existential values, converted and bound through nested closures) still most of the rest
    /// (docs/performance.md, "Recording decisions"). Columns and values are those of the record insert: a date binds as
    /// the text `Date.databaseValue` writes (the record encoding's default strategy), formatted by `DatabaseDate` without
    /// ICU. No GRDB transaction observer is installed on the store's connections, so stepping the statements directly
    /// hides nothing from GRDB.
    ///
    /// Rows go in statements of `rowsPerStatement` rows (then of 8, then one by one): each statement's end costs SQLite
    /// about as much as a row (its halt, reset and the `AUTOINCREMENT` counter's update). A chunk's texts are copied once
    /// into one buffer and bound without SQLite copying them again (a nil destructor, `SQLITE_STATIC`: the buffer outlives the step).
    static func insertAll(_ rows: [DecisionLogRow], _ db: Database) throws {
        var start = rows.startIndex
        for size in [rowsPerStatement, 8, 1] {
            guard rows.endIndex - start >= size else { continue }
            let statement = try db.cachedStatement(sql: insertSQL(rows: size))
            while rows.endIndex - start >= size {
                try insert(rows[start..<start + size], statement, db)
                start += size
            }
        }
    }

    /// Rows a statement inserts at most: 64 rows of 12 values are 768 parameters, far below SQLite's limit (32,766).
    static let rowsPerStatement = 64

    private static func insertSQL(rows: Int) -> String {
        let row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        return """
            INSERT INTO "decisionLog" ("id", "at", "actor", "action", "resourceType", "resourceId", "effect", "reason", "policyHash", \
            "policyLocation", "subject", "facts") VALUES \(repeatElement(row, count: rows).joined(separator: ", "))
            """
    }

    /// Binds `rows` to `statement`, which inserts exactly that many, and steps it once.
    private static func insert(_ rows: ArraySlice<DecisionLogRow>, _ statement: Statement, _ db: Database) throws {
        let handle = statement.sqliteStatement
        func fail(_ code: CInt) -> DatabaseError {
            DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
        }
        // The texts of every row, in column order; the second pass walks them again in the same order.
        let dates = rows.map { DatabaseDate.text($0.at) }
        var texts: [UInt8] = []
        texts.reserveCapacity(rows.count * 512)
        for (row, date) in zip(rows, dates) {
            texts.append(contentsOf: date.utf8)
            row.forEachText { if let text = $0 { texts.append(contentsOf: text.utf8) } }
        }
        let reset = sqlite3_reset(handle)
        guard reset == SQLITE_OK else { throw fail(reset) }
        defer {
            // The bindings point into `texts`: none may outlive it.
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try texts.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
            var offset = 0
            var index: CInt = 0
            func bind(_ text: String?) throws {
                index += 1
                let code: CInt
                if let text {
                    let count = text.utf8.count
                    code = sqlite3_bind_text(handle, index, base + offset, CInt(count), nil)
                    offset += count
                } else {
                    code = sqlite3_bind_null(handle, index)
                }
                guard code == SQLITE_OK else { throw fail(code) }
            }
            for (row, date) in zip(rows, dates) {
                index += 1
                let id = row.id.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index)
                guard id == SQLITE_OK else { throw fail(id) }
                try bind(date)
                try row.forEachText(bind)
            }
            let step = sqlite3_step(handle)
            guard step == SQLITE_DONE else { throw fail(step) }
        }
    }

    /// The row's text columns after `at`, in the statement's order.
    private func forEachText(_ body: (String?) throws -> Void) rethrows {
        try body(actor)
        try body(action)
        try body(resourceType)
        try body(resourceId)
        try body(effect)
        try body(reason)
        try body(policyHash)
        try body(policyLocation)
        try body(subject)
        try body(facts)
    }
}
