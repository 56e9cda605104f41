import Foundation
import Identity
import Logging
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The PostgreSQL form of `IdentityStore`, on a `PostgresClient` connection pool.
///
/// Writes run at `SERIALIZABLE`: PostgreSQL aborts one of two transactions whose reads and writes
/// could not have happened one after the other (SQLSTATE 40001, or a deadlock, 40P01), and the
/// store runs the aborted body again from scratch, up to `maxWriteAttempts` times. That keeps every
/// read-then-write rule of the identity flows (PIN failure counts, refresh rotation, single-use
/// challenges, throttles) as strict across replicas as SQLite's single writer keeps it in one
/// process, without each flow naming the rows it must lock. Reads run in a `REPEATABLE READ READ
/// ONLY` transaction, so a read body sees one snapshot.
///
/// The client is a `Service`: queries wait for a connection only while `run()` runs (in the
/// server's `ServiceGroup`, or through `withStore`). Call `migrate()` once it runs.
public final class PostgresStore: IdentityStore, Service {
    /// Where the store connects and how many connections its pool may open.
    public let configuration: PostgresLocation
    let client: PostgresClient
    let logger: Logger

    /// How many times a write body runs before a serialization failure is returned as a storage error.
    public static let maxWriteAttempts = 12

    /// Test hook: nil, or how many more write transactions commit before one fails (the counter is
    /// then cleared). The failing one runs its body, then the server raises a serialization failure
    /// (SQLSTATE 40001) in place of its `COMMIT`, so `write` rolls back and runs the body again.
    private let commitFault = Mutex<Int?>(nil)

    /// Test hook: after `skipping` more write transactions commit, the next one fails once with a
    /// serialization failure raised by the server after its body ran, as a concurrent writer would cause.
    package func failCommitForTesting(afterSkipping skipping: Int = 0) {
        commitFault.withLock { $0 = skipping }
    }

    /// Test hook: whether the failure `failCommitForTesting` asked for has not happened yet.
    package var commitFaultPending: Bool { commitFault.withLock { $0 != nil } }

    /// Whether this write transaction is the one `failCommitForTesting` chose.
    private func takeCommitFault() -> Bool {
        commitFault.withLock { fault in
            guard let left = fault else { return false }
            if left == 0 {
                fault = nil
                return true
            }
            fault = left - 1
            return false
        }
    }

    /// Creates the client (no I/O yet). `logger` receives the client's own messages; its level is
    /// raised to at least `.info`, so no statement is logged (bound values are never printed either:
    /// postgres-nio shows every bind as `****`).
    public init(configuration: PostgresLocation, logger: Logger = Logger(label: "gatehouse.postgres")) {
        self.configuration = configuration
        var logger = logger
        if logger.logLevel < .info { logger.logLevel = .info }
        self.logger = logger
        var config = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username, password: configuration.password,
            database: configuration.database, tls: configuration.sslMode.clientTLS)
        config.options.maximumConnections = configuration.maxConnections
        config.options.minimumConnections = 0
        config.options.connectTimeout = .seconds(10)
        if let schema = configuration.schema {
            config.options.additionalStartupParameters = [("search_path", schema)]
        }
        client = PostgresClient(configuration: config, backgroundLogger: logger)
    }

    /// Runs the connection pool until the task is cancelled or the service group shuts down gracefully.
    public func run() async throws {
        await client.run()
    }

    /// Runs `body` with a migrated store whose client runs only for the body's duration.
    public static func withStore<T: Sendable>(
        _ configuration: PostgresLocation, logger: Logger = Logger(label: "gatehouse.postgres"),
        _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = PostgresStore(configuration: configuration, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            return try await body(store)
        }
    }

    // MARK: - Transactions

    package func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        do {
            return try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", writes: false, body)
        } catch {
            throw Self.mapped(error)
        }
    }

    package func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await transaction("BEGIN ISOLATION LEVEL SERIALIZABLE", writes: true, body)
            } catch let error where Self.isSerializationFailure(error) && attempt < Self.maxWriteAttempts {
                // Back off a little, with jitter, so the transactions that collided do not collide again.
                let ceiling = min(2 << attempt, 200)
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...ceiling)))
                attempt += 1
            } catch {
                throw Self.mapped(error)
            }
        }
    }

    /// `VACUUM`s the tables an erasure or deletion touches, so the old row versions holding erased
    /// values are removed from the tables' pages. It cannot reach copies outside them: WAL segments
    /// not yet recycled, base backups, replicas' own files (docs/identity.md).
    package func flushErasures() async throws {
        do {
            try await client.withConnection { connection in
                for table in Self.erasedTables {
                    try await connection.query(PostgresQuery(unsafeSQL: "VACUUM \(quoted(table))"), logger: logger)
                }
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    static let erasedTables = [
        "user", "appRole", "appleIdentity", "pinCredential", "privacySettings", "subscription", "session", "refreshToken", "deviceKey",
        "deviceChallenge", "resource", "membership", "shareCode", "usageCounter", "userUsageCounter", "auditEvent", "decisionLog", "erasure",
    ]

    private func transaction<T: Sendable>(_ begin: String, writes: Bool, _ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws
        -> T
    {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: begin), logger: logger)
            // A new list per run: a run rolled back for a retry takes its deferred actions with it.
            let actions = AfterCommitActions()
            let value: T
            do {
                value = try await body(PostgresTransaction(connection: connection, logger: logger, actions: actions))
            } catch {
                // A broken connection cannot roll back; the server ends its transaction with it.
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            do {
                if writes, self.takeCommitFault() {
                    try await connection.query(
                        "DO $$ BEGIN RAISE EXCEPTION 'injected by failCommitForTesting' USING ERRCODE = 'serialization_failure'; END $$",
                        logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            actions.runAfterCommit()
            return value
        }
    }

    // MARK: - Errors

    /// 40001 serialization_failure, 40P01 deadlock_detected: the transaction may succeed when run again.
    static func isSerializationFailure(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01"
    }

    /// Passes identity errors through; turns PostgreSQL errors into `storage` errors that name the
    /// SQLSTATE only (never the statement, its values or the server's message, which can quote them).
    static func mapped(_ error: any Error) -> any Error {
        switch error {
        case let error as IdentityError: return error
        case let error as PSQLError:
            if let state = error.serverInfo?[.sqlState] {
                return IdentityError(.storage, field: "database", "PostgreSQL error \(state)")
            }
            return IdentityError(.storage, field: "database", "PostgreSQL unavailable (\(error.code))")
        case is CancellationError: return error
        default: return IdentityError(.storage, field: "database", "PostgreSQL store error")
        }
    }
}

extension PostgresLocation.SSLMode {
    var clientTLS: PostgresClient.Configuration.TLS {
        switch self {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }
}

/// A double-quoted SQL identifier. Identifiers come from the code (table and column names), never
/// from input; anything but letters, digits and `_` is a programmer error.
func quoted(_ identifier: String) -> String {
    precondition(
        !identifier.isEmpty && identifier.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F },
        "not an identifier")
    return "\"" + identifier + "\""
}
