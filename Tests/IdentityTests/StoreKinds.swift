import Foundation
import GatehouseTestSupport
import Logging
import PostgresNIO
import Testing

@testable import Identity
@testable import IdentityPostgres

/// The stores every identity test runs against (`@Test(arguments: StoreKind.testable)`).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    /// SQLite always; PostgreSQL when `GATEHOUSE_TEST_POSTGRES_URL` names a database. Without it the
    /// `PostgresAvailability` test says the PostgreSQL cases did not run (and fails in CI).
    static var testable: [StoreKind] { TestPostgres.url == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }
}

/// The PostgreSQL database tests use: `GATEHOUSE_TEST_POSTGRES_URL`, e.g.
/// `postgres://gatehouse@127.0.0.1:54329/gatehouse_test`. Each harness gets a schema of its own.
enum TestPostgres {
    static let url: String? = {
        guard let value = ProcessInfo.processInfo.environment["GATEHOUSE_TEST_POSTGRES_URL"], !value.isEmpty else { return nil }
        return value
    }()
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// At most this many tests hold PostgreSQL schemas at once (each pool opens up to 4 connections),
    /// so a whole parallel run stays far below the server's default `max_connections` of 100.
    static var gate: AsyncGate { PostgresTestGate.shared }

    static func configuration(schema: String) throws -> PostgresLocation {
        guard let url else { throw IdentityError(.notFound, field: "GATEHOUSE_TEST_POSTGRES_URL", "is not set") }
        guard case .postgres(let location) = try IdentityStoreLocation.parse(url, field: "GATEHOUSE_TEST_POSTGRES_URL") else {
            throw IdentityError(.invalidInput, field: "GATEHOUSE_TEST_POSTGRES_URL", "is not a postgres:// URL")
        }
        var configuration = location
        configuration.schema = schema
        configuration.maxConnections = 4
        // A lease waits up to 20 s, not the shipped 3 s: a whole parallel run on two cores queues leases longer than
        // that, and a test of concurrent writes (SpaceTests.concurrentUsageIncrementsLoseNothing) then failed on the
        // wait, not on what it checks. Deadline behaviour has its own stores in PressureTests.
        configuration.deadlines.pool = .seconds(20)
        return configuration
    }

    /// postgres-nio warns when a lease races the pool's start, which the registry's task always does.
    static let quietLogger: Logger = {
        var logger = Logger(label: "gatehouse.postgres.test")
        logger.logLevel = .error
        return logger
    }()

    static func newSchemaName() -> String {
        "gh_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }

    /// A migrated store in a new schema, running until the test's `StoreScope` ends.
    static func makeStore(
        schema: String = newSchemaName(), create: Bool = true, migrate: Bool = true, logger: Logger = quietLogger
    ) async throws -> PostgresStore {
        guard let scope = StoreScope.Registry.current else {
            Issue.record("a PostgreSQL harness outside a suite marked .storeScope: its schema would never be dropped")
            throw IdentityError(.storage, field: "scope", "no StoreScope")
        }
        let store = PostgresStore(configuration: try configuration(schema: schema), logger: logger)
        await scope.register(store, dropSchema: create)
        if create { try await store.client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \"\(schema)\"")) }
        if migrate { try await store.migrate() }
        return store
    }
}

/// Gives each test case a registry of the PostgreSQL stores its harnesses open; when the case ends,
/// their schemas are dropped and their clients stopped, so tests never see each other's rows.
struct StoreScope: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> StoreScope? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let registry = Registry()
        do {
            try await Registry.$current.withValue(registry) { try await function() }
        } catch {
            await registry.close()
            throw error
        }
        await registry.close()
    }

    actor Registry {
        @TaskLocal static var current: Registry?
        private var stores: [(store: PostgresStore, run: Task<Void, Never>, drop: Bool)] = []
        /// The one acquisition of the gate this test case makes, shared by all its harnesses. A flag set after the
        /// `await` let two harnesses opened at once (the actor is re-entered while the first waits) take a permit each
        /// and give one back: every such case leaked a permit, and once the 12 were gone every later PostgreSQL case
        /// waited forever (the whole run hung, with no thread busy, on loaded machines where the gate was contended).
        private var gateAcquisition: Task<Void, Never>?

        func register(_ store: PostgresStore, dropSchema: Bool) async {
            let acquisition = gateAcquisition ?? Task { await TestPostgres.gate.acquire() }
            gateAcquisition = acquisition
            await acquisition.value
            stores.append((store, Task { try? await store.run() }, dropSchema))
        }

        func close() async {
            for entry in stores {
                if entry.drop, let schema = entry.store.configuration.schema {
                    do {
                        // Without the store's lock_timeout and statement_timeout: the drop waits for whatever the test
                        // left running, and dropping a schema's tables on a loaded machine can outlast 5 s.
                        try await entry.store.client.withConnection { connection in
                            try await connection.query("SET lock_timeout = 0", logger: TestPostgres.quietLogger)
                            try await connection.query("SET statement_timeout = 0", logger: TestPostgres.quietLogger)
                            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: TestPostgres.quietLogger)
                            try await connection.query("RESET lock_timeout", logger: TestPostgres.quietLogger)
                            try await connection.query("RESET statement_timeout", logger: TestPostgres.quietLogger)
                        }
                    } catch {
                        Issue.record("could not drop the test schema \(schema): \(String(reflecting: error))")
                    }
                }
                entry.run.cancel()
                await entry.run.value
            }
            stores = []
            if let acquisition = gateAcquisition {
                gateAcquisition = nil
                await acquisition.value
                await TestPostgres.gate.release()
            }
        }
    }
}

extension Trait where Self == StoreScope {
    /// PostgreSQL schemas of the suite's harnesses are dropped when each test case ends.
    static var storeScope: StoreScope { StoreScope() }
}

@Suite struct PostgresAvailability {
    @Test(
        .disabled(
            if: TestPostgres.url == nil && !TestPostgres.isCI,
            "GATEHOUSE_TEST_POSTGRES_URL is not set: the identity tests ran on SQLite only, their PostgreSQL cases did not run"))
    func thePostgresCasesRun() {
        #expect(TestPostgres.url != nil, "CI=true and GATEHOUSE_TEST_POSTGRES_URL is not set: the PostgreSQL cases of the identity tests cannot run")
    }
}
