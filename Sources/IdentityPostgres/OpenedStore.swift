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
    /// The store a `--database` value opened: exactly one of the two, so no state can name both or neither.
    public enum Backend: Sendable {
        /// A SQLite file, opened and migrated.
        case sqlite(AppDatabase)
        /// A PostgreSQL pool: not connected until its `service` runs, not migrated until `prepare()`.
        case postgres(PostgresStore)
    }

    /// Where the data lives, as parsed from the `--database` value.
    public let location: IdentityStoreLocation
    /// The opened store.
    public let backend: Backend

    /// The store the identity flows run their transactions on.
    package var store: any IdentityStore {
        switch backend {
        case .sqlite(let database): SQLiteStore(database)
        case .postgres(let store): store
        }
    }

    /// The SQLite database; nil on PostgreSQL.
    public var sqlite: AppDatabase? {
        if case .sqlite(let database) = backend { database } else { nil }
    }

    /// The PostgreSQL store; nil on SQLite.
    public var postgres: PostgresStore? {
        if case .postgres(let store) = backend { store } else { nil }
    }

    /// Opens the store `value` names (`IdentityStoreLocation.parse`); errors name `field`.
    ///
    /// Throws `IdentityError` (`invalid`, naming `field`) for a value that is neither a path nor a
    /// valid `postgres://` URL, and the error of `AppDatabase.init(path:)` for a SQLite file that
    /// cannot be opened or migrated. A PostgreSQL value does no I/O here.
    public static func open(_ value: String, field: String = "database", logger: Logger = Logger(label: "gatehouse.postgres")) throws
        -> OpenedIdentityStore
    {
        let location = try IdentityStoreLocation.parse(value, field: field)
        switch location {
        case .sqlite(let path):
            return OpenedIdentityStore(location: location, backend: .sqlite(try AppDatabase(path: path)))
        case .postgres(let postgres):
            return OpenedIdentityStore(
                location: location, backend: .postgres(PostgresStore(configuration: postgres, logger: logger)))
        }
    }

    /// What must run for the store to answer: PostgreSQL's connection pool; nil for SQLite.
    public var service: (any Service)? { postgres }

    /// Migrates a PostgreSQL store (its `service` must be running); SQLite was migrated on opening.
    public func prepare() async throws {
        try await postgres?.migrate()
    }

    /// What `/readyz` reports: on PostgreSQL, `PostgresStore.readiness()` (every table requests use, and
    /// that the server takes writes, within its own deadline); on SQLite, a read and a rolled-back write.
    public func readiness() async -> PostgresStore.Readiness {
        switch backend {
        case .postgres(let store): return await store.readiness()
        case .sqlite(let database):
            guard await answers() else { return .unavailable }
            return await database.acceptsWrites() ? .ready : .readOnly
        }
    }

    /// Whether the database answers a trivial query.
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

extension IdentityService {
    /// A service over a PostgreSQL store, for several `policy serve` replicas on one database.
    ///
    /// The store's `run()` must be running (in the caller's `ServiceGroup`) and `migrate()` done
    /// before the first flow. Parameters as in `init(store:configuration:jwksFetcher:now:random:)` for SQLite.
    public convenience init(
        store: PostgresStore, configuration: IdentityConfiguration, jwksFetcher: any JWKSFetcher,
        now: @escaping Now = { Date() }, random: any RandomSource = SystemRandomSource()
    ) {
        self.init(store: store as any IdentityStore, configuration: configuration, jwksFetcher: jwksFetcher, now: now, random: random)
    }

    /// A service over whichever store `OpenedIdentityStore.open(_:field:logger:)` opened.
    public convenience init(
        store: OpenedIdentityStore, configuration: IdentityConfiguration, jwksFetcher: any JWKSFetcher,
        now: @escaping Now = { Date() }, random: any RandomSource = SystemRandomSource()
    ) {
        self.init(store: store.store, configuration: configuration, jwksFetcher: jwksFetcher, now: now, random: random)
    }
}
