import Foundation
import Identity
import Logging
import PostgresNIO
import ServiceLifecycle

/// An identity store opened from a `--database` value: a SQLite file, or a PostgreSQL pool.
///
/// SQLite is opened and migrated at once. PostgreSQL's pool needs its `service` running (in the
/// caller's `ServiceGroup`) before `prepare()` migrates it and before any query.
public struct OpenedIdentityStore: Sendable {
    public let location: IdentityStoreLocation
    public let store: any IdentityStore
    /// The SQLite database; nil on PostgreSQL.
    public let sqlite: AppDatabase?
    /// The PostgreSQL store; nil on SQLite.
    public let postgres: PostgresStore?

    /// Opens the store `value` names (`IdentityStoreLocation.parse`); errors name `field`.
    public static func open(_ value: String, field: String = "database", logger: Logger = Logger(label: "gatehouse.postgres")) throws
        -> OpenedIdentityStore
    {
        switch try IdentityStoreLocation.parse(value, field: field) {
        case .sqlite(let path):
            let database = try AppDatabase(path: path)
            return OpenedIdentityStore(location: .sqlite(path: path), store: SQLiteStore(database), sqlite: database, postgres: nil)
        case .postgres(let location):
            let store = PostgresStore(configuration: PostgresStoreConfiguration(location), logger: logger)
            return OpenedIdentityStore(location: .postgres(location), store: store, sqlite: nil, postgres: store)
        }
    }

    /// What must run for the store to answer: PostgreSQL's connection pool; nil for SQLite.
    public var service: (any Service)? { postgres }

    /// Migrates a PostgreSQL store (its `service` must be running); SQLite was migrated on opening.
    public func prepare() async throws {
        try await postgres?.migrate()
    }

    /// Whether the database answers a trivial query (the server's readiness check).
    public func answers() async -> Bool {
        do {
            _ = try await store.read { tx in try await tx.fetchOne(LogRetentionRow.self, "id", .int(1)) }
            return true
        } catch {
            return false
        }
    }

    /// Where the data lives, without a password: a path, or `postgres://user@host:port/db`.
    public var description: String { location.description }
}
