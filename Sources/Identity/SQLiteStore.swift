import Foundation
import GRDB

/// The SQLite form of `IdentityStore`, on an `AppDatabase`'s pool.
public struct SQLiteStore: IdentityStore {
    public let database: AppDatabase

    public init(_ database: AppDatabase) {
        self.database = database
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) throws -> T) async throws -> T {
        try await mapped { try await database.pool.read { db in try body(SQLiteTransaction(db: db)) } }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) throws -> T) async throws -> T {
        try await mapped { try await database.pool.write { db in try body(SQLiteTransaction(db: db)) } }
    }

    public func flushErasures() async throws {
        try await mapped {
            try await database.pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        }
    }

    /// Passes identity errors through; turns database errors into `storage` errors without SQL or values.
    private func mapped<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as IdentityError {
            throw error
        } catch let error as DatabaseError {
            throw IdentityError(.storage, field: "database", "SQLite error \(error.resultCode.rawValue)")
        }
    }
}

struct SQLiteTransaction: IdentityTransaction {
    let db: Database

    private func whereClause(_ conditions: [String: StoreValue]) -> (String, StatementArguments) {
        guard !conditions.isEmpty else { return ("", StatementArguments()) }
        let keys = conditions.keys.sorted()
        let sql = " WHERE " + keys.map { "\"\($0)\" = ?" }.joined(separator: " AND ")
        var args = StatementArguments()
        for key in keys {
            switch conditions[key]! {
            case .text(let s): args += [s]
            case .blob(let d): args += [d]
            case .int(let i): args += [i]
            case .date(let d): args += [d]
            }
        }
        return (sql, args)
    }

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) throws -> R? {
        try fetchAll(type, conditions).first
    }

    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) throws -> [R] {
        let (clause, args) = whereClause(conditions)
        return try Row.fetchAll(db, sql: "SELECT * FROM \"\(R.table)\"" + clause, arguments: args).map {
            try RowBox<R>.init(row: $0).value
        }
    }

    func insert<R: StoredRow>(_ row: R) throws { try RowBox(row).insert(db) }
    func upsert<R: StoredRow>(_ row: R) throws { try RowBox(row).save(db) }

    func update<R: StoredRow>(_ row: R) throws {
        try RowBox(row).update(db)
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
        try db.execute(sql: "UPDATE auditEvent SET actor = 'erased-' || lower(hex(randomblob(12))) WHERE actor = ?", arguments: [pseudonym])
        var changed = db.changesCount
        try db.execute(
            sql: "UPDATE decisionLog SET actor = 'erased-' || lower(hex(randomblob(12))), resourceId = NULL WHERE actor = ?", arguments: [pseudonym])
        changed += db.changesCount
        try db.execute(sql: "DELETE FROM erasure WHERE pseudonym = ?", arguments: [pseudonym])
        return changed
    }

    func append(_ event: AuditEventRow) throws {
        var event = event
        event.id = nil
        try RowBox(event).insert(db)
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
