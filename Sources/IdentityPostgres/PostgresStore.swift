import Foundation
import Identity
import Logging
import NIOSSL
import PolicyModel
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
/// ONLY` transaction, so a read body sees one snapshot. Two reads are one statement and go without
/// a transaction block (one statement sees one snapshot by itself): `readOne`, and what a decision
/// reads (`decisionRows`), one round trip where `BEGIN`, the statements and `COMMIT` took 7 to 10.
///
/// The client is a `Service`: queries wait for a connection only while `run()` runs (in the
/// server's `ServiceGroup`, or through `withStore`). Call `migrate()` once it runs.
public final class PostgresStore: IdentityStore, Service, FactChangeRelay {
    /// Where the store connects and how many connections its pool may open.
    public let configuration: PostgresLocation
    let client: PostgresClient
    let logger: Logger
    /// The channel writes `NOTIFY` their decision-fact changes on and the relay `LISTEN`s to: one per schema, so
    /// stores in other schemas of the same database do not hear each other.
    let factChannel: String
    /// The identity services told of other replicas' writes (`relay(into:)`), and the signal that one was added.
    private let relayTargets = Mutex<[FactChanges]>([])
    private let relayAdded = AsyncStream<Void>.makeStream()
    /// The listener's connection while it is open, so that `run()` can close it when the store stops.
    private let listenerConnection = Mutex<PostgresConnection?>(nil)

    /// How many times a write body runs before a serialization failure is returned as a storage error.
    public static let maxWriteAttempts = 12

    /// The statements `read`, `write`, `readOne` and `decisionRows` send (`BEGIN`, `COMMIT` and `ROLLBACK` included),
    /// each one round trip to the server: what the round-trip tests count.
    package let roundTrips = RoundTripCounter()

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
            database: configuration.database, tls: configuration.clientTLS)
        config.options.maximumConnections = configuration.maxConnections
        config.options.minimumConnections = 0
        config.options.connectTimeout = configuration.deadlines.connect
        // Settings of every connection, sent in its startup message: the server enforces them, so a stuck
        // statement, a held lock or an abandoned transaction ends on the database's side too.
        let deadlines = configuration.deadlines
        var parameters: [(String, String)] = [
            ("statement_timeout", Self.milliseconds(deadlines.statement)),
            ("lock_timeout", Self.milliseconds(deadlines.lock)),
            ("idle_in_transaction_session_timeout", Self.milliseconds(deadlines.idleInTransaction)),
        ]
        if let schema = configuration.schema { parameters.append(("search_path", schema)) }
        config.options.additionalStartupParameters = parameters
        client = PostgresClient(configuration: config, backgroundLogger: logger)
        factChannel = "gatehouse_facts" + (configuration.schema.map { "_" + $0 } ?? "")
    }

    /// Tells `changes` of every fact change other replicas' writes announce, from when the relay's `LISTEN` is up; until
    /// then, and whenever its connection is lost, `changes` knows others are not heard (cached facts are trusted for
    /// `FactChanges.stalenessBound` only), and on every reconnect it is told `.everything`.
    package func relay(into changes: FactChanges) {
        changes.relay(up: false)
        relayTargets.withLock { $0.append(changes) }
        relayAdded.continuation.yield()
    }

    /// Listens on `factChannel` while the store runs, once a service asked to be told: on a connection of its own,
    /// outside the pool (so a small pool keeps all its connections for requests), reconnected after a loss (every
    /// 100 ms at first, at most every second).
    private func relayFactChanges() async {
        for await _ in relayAdded.stream { break }
        var pause: Duration = .milliseconds(100)
        var attempt = 0
        while !Task.isCancelled {
            let listened = Mutex(false)
            attempt += 1
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try listenerConfiguration(), id: attempt, logger: logger)
                listenerConnection.withLock { $0 = connection }
                defer { listenerConnection.withLock { $0 = nil } }
                do {
                    try await connection.listen(on: factChannel) { notifications in
                        for target in self.relayTargets.withLock({ $0 }) { target.relay(up: true) }
                        listened.withLock { $0 = true }
                        for try await notification in notifications {
                            let changes = FactChange.decode(notification.payload)
                            for target in self.relayTargets.withLock({ $0 }) { target.publish(changes) }
                        }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if !Task.isCancelled { logger.warning("the fact-change listener lost its connection; reconnecting") }
            }
            for target in relayTargets.withLock({ $0 }) { target.relay(up: false) }
            if listened.withLock({ $0 }) { pause = .milliseconds(100) }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(1))
        }
    }

    /// The listener's connection: the pool's server, credentials, TLS and search path, with its connect deadline.
    private func listenerConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch configuration.connectionTLS {
            case .none: .disable
            case .some((let tls, let required)): required ? .require(try NIOSSLContext(configuration: tls)) : .prefer(try NIOSSLContext(configuration: tls))
            }
        var config = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username, password: configuration.password,
            database: configuration.database, tls: tls)
        config.options.connectTimeout = .milliseconds(Int64(configuration.deadlines.connect.components.seconds * 1000))
        if let schema = configuration.schema { config.options.additionalStartupParameters = [("search_path", schema)] }
        return config
    }

    static func milliseconds(_ d: Duration) -> String {
        String(max(1, d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000))
    }

    /// Leases a connection from the pool for `body`, waiting at most `deadlines.pool` for one (every
    /// connection busy, or the server unreachable while the pool keeps trying to connect): past it the
    /// wait is cancelled and the caller gets `storage_unavailable`. Once leased, the connection's own
    /// deadlines (`statement_timeout`, `lock_timeout`) bound the body.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = self.client
        let wait = configuration.deadlines.pool
        let leased = LeaseFlag()
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    leased.set()
                    return try await body(connection)
                }
            }
            group.addTask {
                try await Task.sleep(for: wait)
                guard leased.isSet else { throw IdentityError.unavailable("no database connection within the pool deadline") }
                return nil
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    /// Runs the connection pool until the task is cancelled or the service group shuts down gracefully.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.relayFactChanges() }
            // The pool stops at shutdown; the listener goes with it. Its connection is closed as well as its task
            // cancelled: a `LISTEN` still being set up when the cancellation arrives is then failed by the close
            // rather than left waiting for an answer, and `run()` returns.
            await client.run()
            group.cancelAll()
            if let connection = listenerConnection.withLock({ $0 }) { try? await connection.close() }
        }
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

    /// One statement on a pooled connection, outside any transaction block: no `BEGIN`, no `COMMIT`.
    package func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let (logger, factChannel, roundTrips) = (self.logger, self.factChannel, self.roundTrips)
        do {
            return try await withConnection { connection in
                let bare = PostgresTransaction(connection: connection, logger: logger, factChannel: factChannel, actions: AfterCommitActions(), roundTrips: roundTrips)
                return try await body(OneStatementTransaction(base: bare))
            }
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

    // MARK: - Decision reads

    /// The rows a decision reads, in one statement: one round trip, no `BEGIN`/`COMMIT` (one statement sees one
    /// snapshot by itself). A parameter left nil matches nothing, so its part comes back empty. Lists come as arrays
    /// in key order, names and values from the same ordered subquery. The session's columns are named
    /// (`DecisionSession.columns`, what SQLite's read names too), never `s.*`: its token hashes and refresh key, and any
    /// column `session` gains later, stay in the database.
    static let decisionRowsSQL = """
        SELECT \(DecisionSession.columns.map { "s." + quoted($0) }.joined(separator: ", ")),
          sub."tier" AS "sub.tier", sub."expiresAt" AS "sub.expiresAt",
          ARRAY(SELECT "role" FROM "appRole" WHERE "userId" = s."userId" ORDER BY "role") AS "roles",
          p."analytics" AS "p.analytics", p."crashReporting" AS "p.crashReporting", p."aiSuggestions" AS "p.aiSuggestions",
          p."dataSharing" AS "p.dataSharing",
          ARRAY(SELECT "name" FROM "userUsageCounter" WHERE "userId" = s."userId" ORDER BY "name") AS "uu.names",
          ARRAY(SELECT "value" FROM "userUsageCounter" WHERE "userId" = s."userId" ORDER BY "name") AS "uu.values",
          r."id" AS "r.id", r."type" AS "r.type", r."ownerId" AS "r.ownerId",
          ARRAY(SELECT "userId" FROM "membership" WHERE "resourceId" = r."id" ORDER BY "userId") AS "m.users",
          ARRAY(SELECT "role" FROM "membership" WHERE "resourceId" = r."id" ORDER BY "userId") AS "m.roles",
          ARRAY(SELECT "name" FROM "usageCounter" WHERE "resourceId" = r."id" ORDER BY "name") AS "u.names",
          ARRAY(SELECT "value" FROM "usageCounter" WHERE "resourceId" = r."id" ORDER BY "name") AS "u.values"
        FROM (SELECT 1) AS "one"
        LEFT JOIN "session" s ON s."accessTokenHash" = $1
        LEFT JOIN "subscription" sub ON sub."userId" = s."userId"
        LEFT JOIN "privacySettings" p ON p."userId" = s."userId"
        LEFT JOIN "resource" r ON r."id" = $2
        """

    package func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        let logger = self.logger
        let roundTrips = self.roundTrips
        do {
            return try await withConnection { connection in
                var binds = PostgresBindings()
                binds.append(accessTokenHash.map { ByteBuffer(bytes: $0) })
                binds.append(resourceId)
                roundTrips.add()
                let rows = try await connection.query(PostgresQuery(unsafeSQL: Self.decisionRowsSQL, binds: binds), logger: logger).collect()
                guard let row = rows.first else { return DecisionRows() }
                return try Self.decisionRows(row)
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// `DecisionRows` from the one row of `decisionRowsSQL`.
    static func decisionRows(_ row: PostgresRow) throws -> DecisionRows {
        let cells = row.makeRandomAccess()
        func pairs<V>(_ keys: String, _ values: [V]) throws -> [String: V] {
            let k = try cells[keys].decode([String].self)
            guard k.count == values.count else { throw IdentityError(.storage, field: "database", "a decision read's lists disagree") }
            return Dictionary(zip(k, values), uniquingKeysWith: { first, _ in first })
        }
        var read = DecisionRows()
        if cells["userId"].bytes != nil {
            read.session = try RowDecoding.decode(DecisionSession.self, row)
            var privacy = PrivacySettings()
            if cells["p.analytics"].bytes != nil {
                privacy = PrivacySettings(
                    stored: try cells["p.analytics"].decode(Bool.self), crashReporting: try cells["p.crashReporting"].decode(Bool.self),
                    aiSuggestions: try cells["p.aiSuggestions"].decode(Bool.self), dataSharing: try cells["p.dataSharing"].decode(String.self))
            }
            read.user = UserFacts(
                tier: try cells["sub.tier"].decode(String?.self), subscriptionExpiry: try cells["sub.expiresAt"].decode(Date?.self),
                roles: try cells["roles"].decode([String].self), privacy: privacy, usage: try pairs("uu.names", try cells["uu.values"].decode([Int].self)))
        }
        if cells["r.id"].bytes != nil {
            read.resource = ResourceFacts(
                id: try cells["r.id"].decode(String.self), type: try cells["r.type"].decode(String.self), ownerId: try cells["r.ownerId"].decode(String.self),
                members: try pairs("m.users", try cells["m.roles"].decode([String].self)),
                usage: try pairs("u.names", try cells["u.values"].decode([Int].self)))
        }
        return read
    }

    /// `VACUUM`s the tables an erasure or deletion touches, so the old row versions holding erased
    /// values are removed from the tables' pages. It cannot reach copies outside them: WAL segments
    /// not yet recycled, base backups, replicas' own files (docs/identity.md).
    package func flushErasures() async throws {
        _ = try await flushErasuresReportingSkipped()
    }

    /// As `flushErasures`; returns the tables this role may not VACUUM (PostgreSQL lets only a table's or the
    /// database's owner, or a superuser), which it skips and logs by name: the server would only warn in its
    /// own log, and the erasure would look complete.
    package func flushErasuresReportingSkipped() async throws -> [String] {
        let logger = self.logger
        do {
            let skipped = try await withConnection { connection -> [String] in
                var binds = PostgresBindings()
                binds.append(Self.erasedTables)
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                            WHERE n.nspname = current_schema() AND c.relname = ANY($1)
                              AND NOT pg_has_role(c.relowner, 'USAGE')
                              AND NOT pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'USAGE')
                              AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
                            """, binds: binds), logger: logger
                ).collect()
                let skipped = Set(try rows.map { try $0.decode(String.self) })
                for table in Self.erasedTables where !skipped.contains(table) {
                    try await connection.query(PostgresQuery(unsafeSQL: "VACUUM \(quoted(table))"), logger: logger)
                }
                return Self.erasedTables.filter(skipped.contains)
            }
            if !skipped.isEmpty {
                logger.warning(
                    "erasure cleanup skipped: this role does not own the tables, so VACUUM cannot remove the erased row versions; the owner's VACUUM will",
                    metadata: ["tables": .string(skipped.joined(separator: ","))])
            }
            return skipped
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Counts one in the window `scope` in one statement at READ COMMITTED: concurrent counts wait for the
    /// row's lock in turn (microseconds) and each sees the count before it, instead of aborting each other
    /// as the flows' serializable transactions would. The window restarts only once it has ended, never
    /// moving back (the same rule as `GuessLimitRow.counting`).
    package func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow {
        let logger = self.logger
        do {
            return try await withConnection { connection in
                var binds = PostgresBindings()
                binds.append(scope)
                binds.append(t)
                binds.append(window)
                try await connection.query("BEGIN ISOLATION LEVEL READ COMMITTED", logger: logger)
                do {
                    let rows = try await connection.query(
                        PostgresQuery(
                            unsafeSQL: """
                                INSERT INTO "guessLimit" ("scope", "windowStart", "failures") VALUES ($1, $2, 1)
                                ON CONFLICT ("scope") DO UPDATE SET
                                  "windowStart" = CASE WHEN $2 >= "guessLimit"."windowStart" + make_interval(secs => $3)
                                    THEN $2 ELSE "guessLimit"."windowStart" END,
                                  "failures" = CASE WHEN $2 >= "guessLimit"."windowStart" + make_interval(secs => $3)
                                    THEN 1 ELSE "guessLimit"."failures" + 1 END
                                RETURNING *
                                """, binds: binds), logger: logger
                    ).collect()
                    try await connection.query("COMMIT", logger: logger)
                    guard let row = rows.first else { throw IdentityError(.storage, field: "database", "no window row") }
                    return try RowDecoding.decode(GuessLimitRow.self, row)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// What `/readyz` reports of PostgreSQL.
    public enum Readiness: Sendable, Equatable {
        /// Every table the requests use answers a read, and the server takes writes.
        case ready
        /// It answers, but in recovery (a standby) or read-only: writes would fail.
        case readOnly
        /// It does not answer within `deadlines.readiness`, or a table is missing or unreadable.
        case unavailable
    }

    /// Checks what requests use, within `deadlines.readiness` in all (the pool's wait included): a read of
    /// every table of the schema (a missing or unreadable one fails it), and that the server is not in
    /// recovery and not read-only.
    public func readiness() async -> Readiness {
        let logger = self.logger
        let limit = configuration.deadlines.readiness
        let probe = "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on', "
            + Self.readTables.map { "(SELECT 1 FROM \(quoted($0)) LIMIT 0)" }.joined(separator: ", ")
        let checked = await withinDeadline(limit) { () -> Readiness in
            do {
                return try await self.withConnection { connection in
                    let rows = try await connection.query(PostgresQuery(unsafeSQL: probe), logger: logger).collect()
                    guard let row = rows.first else { return Readiness.unavailable }
                    return try row.decode(Bool.self) ? .readOnly : .ready
                }
            } catch {
                return .unavailable
            }
        }
        return checked ?? .unavailable
    }

    /// The tables requests read and write: every table of the schema.
    static let readTables = erasedTables + ["guessLimit", "pinThrottle", "appleNonce", "logRetention", "gatehouseMigration", "decisionKey"]

    static let erasedTables = [
        "user", "appRole", "appleIdentity", "pinCredential", "privacySettings", "subscription", "session", "refreshToken", "deviceKey",
        "deviceChallenge", "resource", "membership", "shareCode", "usageCounter", "userUsageCounter", "auditEvent", "decisionLog", "erasure",
    ]

    private func transaction<T: Sendable>(_ begin: String, writes: Bool, _ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws
        -> T
    {
        let logger = self.logger
        let roundTrips = self.roundTrips
        return try await withConnection { connection in
            roundTrips.add()
            try await connection.query(PostgresQuery(unsafeSQL: begin), logger: logger)
            // A new list per run: a run rolled back for a retry takes its deferred actions with it.
            let actions = AfterCommitActions()
            let value: T
            do {
                value = try await body(
                    PostgresTransaction(connection: connection, logger: logger, factChannel: self.factChannel, actions: actions, roundTrips: roundTrips))
            } catch {
                // A broken connection cannot roll back; the server ends its transaction with it.
                roundTrips.add()
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            do {
                if writes, self.takeCommitFault() {
                    try await connection.query(
                        "DO $$ BEGIN RAISE EXCEPTION 'injected by failCommitForTesting' USING ERRCODE = 'serialization_failure'; END $$",
                        logger: logger)
                }
                roundTrips.add()
                try await connection.query("COMMIT", logger: logger)
            } catch {
                roundTrips.add()
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

    /// SQLSTATEs that mean the database missed a deadline or is going away, not that the request was wrong:
    /// statement_timeout (57014), lock_timeout (55P03), idle_in_transaction_session_timeout (25P03), shutdown
    /// and restart (57P01, 57P02, 57P03), too many connections (53300); class 08 is a connection failure.
    static let unavailableStates: Set<String> = ["57014", "55P03", "25P03", "57P01", "57P02", "57P03", "53300"]

    /// Passes identity errors through; turns PostgreSQL errors into `storage` errors that name the
    /// SQLSTATE only (never the statement, its values or the server's message, which can quote them).
    /// A missed deadline, a lost connection or a server going away is `storage_unavailable` (with a
    /// retry delay): the request changed nothing and may be tried again.
    static func mapped(_ error: any Error) -> any Error {
        switch error {
        case let error as IdentityError: return error
        case let error as PSQLError:
            if let state = error.serverInfo?[.sqlState] {
                if unavailableStates.contains(state) || state.hasPrefix("08") || state == "40001" || state == "40P01" {
                    return IdentityError.unavailable("PostgreSQL error \(state)")
                }
                return IdentityError(.storage, field: "database", "PostgreSQL error \(state)")
            }
            return IdentityError.unavailable("PostgreSQL unavailable (\(error.code))")
        case is CancellationError: return error
        case is NIOSSLError: return IdentityError.unavailable("PostgreSQL TLS handshake failed")
        default: return IdentityError(.storage, field: "database", "PostgreSQL store error")
        }
    }
}

/// Whether a pooled connection was handed over (`PostgresStore.withConnection`'s deadline applies until then).
final class LeaseFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

extension PostgresLocation {
    /// The TLS the URL asks for. `require`, `verify-ca` and `verify-full` all check the chain (to the
    /// system's roots, or to `sslrootcert` alone); only `verify-ca` skips the host name.
    var clientTLS: PostgresClient.Configuration.TLS {
        guard let (tls, required) = connectionTLS else { return .disable }
        return required ? .require(tls) : .prefer(tls)
    }

    /// The TLS configuration and whether it is required; nil for `disable`.
    var connectionTLS: (TLSConfiguration, required: Bool)? {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let sslRootCert { tls.trustRoots = .file(sslRootCert) }
        switch sslMode {
        case .disable: return nil
        case .prefer: return (tls, false)
        case .require, .verifyFull: return (tls, true)
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            return (tls, true)
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

/// A count of statements sent, each one round trip to the server.
package final class RoundTripCounter: Sendable {
    private let count = Atomic<Int>(0)
    package init() {}
    /// The statements counted so far.
    package var value: Int { count.load(ordering: .relaxed) }
    func add() { count.add(1, ordering: .relaxed) }
}
