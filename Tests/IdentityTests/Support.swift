import Crypto
import Foundation
import GRDB
import PolicyModel
import PostgresNIO
import Synchronization
import Testing
import _CryptoExtras

@testable import Identity
@testable import IdentityPostgres

/// A clock tests move by hand; nothing in the suite sleeps.
final class TestClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_795_000_000)) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var source: Now { { [self] in self.now } }
}

/// A JWKS source whose document tests can swap, counting fetches.
final class StaticJWKSFetcher: JWKSFetcher {
    private let state: Mutex<(Data, Int)>
    init(_ jwks: Data) { state = Mutex((jwks, 0)) }
    func set(_ jwks: Data) { state.withLock { $0.0 = jwks } }
    var fetches: Int { state.withLock { $0.1 } }
    func fetchJWKS() async throws -> Data { state.withLock { $0.1 += 1; return $0.0 } }
}

/// Apple's side of Sign in with Apple, played by keys the test generates.
struct AppleFixture {
    static let clientId = "com.example.gatehouse"
    let key: _RSA.Signing.PrivateKey
    let kid: String

    init(kid: String = "test-key-1") throws {
        key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.kid = kid
    }

    static func jwks(_ fixtures: [AppleFixture]) throws -> Data {
        let keys: [[String: String]] = try fixtures.map {
            let p = try $0.key.publicKey.getKeyPrimitives()
            return ["kty": "RSA", "kid": $0.kid, "use": "sig", "alg": "RS256", "n": SecretCoding.base64URL(p.modulus), "e": SecretCoding.base64URL(p.publicExponent)]
        }
        return try JSONSerialization.data(withJSONObject: ["keys": keys], options: [.sortedKeys])
    }

    static func json(_ object: [String: Any]) -> String {
        SecretCoding.base64URL(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Claims Apple would send for `rawNonce` at `now`; `overrides` replace or (with NSNull) remove claims.
    static func claims(sub: String = "000123.apple.user", rawNonce: String, now: Date, overrides: [String: Any] = [:]) -> [String: Any] {
        var c: [String: Any] = [
            "iss": "https://appleid.apple.com", "aud": clientId, "sub": sub,
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 600,
            "nonce": SecretCoding.hex(SHA256.hash(data: Data(rawNonce.utf8))),
            "email": "abc123@privaterelay.appleid.com", "is_private_email": "true", "email_verified": "true",
        ]
        for (k, v) in overrides { c[k] = v is NSNull ? nil : v }
        return c
    }

    /// A token signed RS256 with this key.
    func token(_ claims: [String: Any], header: [String: Any]? = nil) -> String {
        let h = header ?? ["alg": "RS256", "kid": kid]
        let input = AppleFixture.json(h) + "." + AppleFixture.json(claims)
        let sig = try! key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + SecretCoding.base64URL(sig.rawRepresentation)
    }
}

/// A service on a fresh store of `kind`: a SQLite file in a temporary folder, or a PostgreSQL schema
/// of its own (random name) in the database `GATEHOUSE_TEST_POSTGRES_URL` names, dropped when the
/// test ends (`StoreScope`). With a test clock and Apple keys.
final class Harness: Sendable {
    let kind: StoreKind
    let dir: URL
    /// The SQLite database (nil on PostgreSQL).
    let sqlite: AppDatabase?
    /// The PostgreSQL store (nil on SQLite).
    let postgres: PostgresStore?
    let service: IdentityService
    let clock: TestClock
    let apple: AppleFixture
    let fetcher: StaticJWKSFetcher

    static let testRounds = 1_000

    init(
        _ kind: StoreKind = .sqlite, configure: (inout IdentityConfiguration) -> Void = { _ in },
        wrapStore: (any IdentityStore) -> any IdentityStore = { $0 }
    ) async throws {
        self.kind = kind
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let store: any IdentityStore
        switch kind {
        case .sqlite:
            let database = try AppDatabase(path: dir.appendingPathComponent("identity.sqlite").path)
            (sqlite, postgres, store) = (database, nil, SQLiteStore(database))
        case .postgres:
            let pg = try await TestPostgres.makeStore()
            (sqlite, postgres, store) = (nil, pg, pg)
        }
        clock = TestClock()
        apple = try AppleFixture.shared()
        fetcher = StaticJWKSFetcher(try AppleFixture.jwks([apple]))
        var config = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: [AppleFixture.clientId]))
        config.pin = .unsafeForTesting(rounds: Harness.testRounds)
        config.operatorTokenDigests = [OperatorCredential.digest(of: OperatorCredential.testToken)]
        configure(&config)
        service = IdentityService(store: wrapStore(store), configuration: config, jwksFetcher: fetcher, now: clock.source)
    }

    /// The SQLite database; the test must be running on SQLite.
    var database: AppDatabase {
        guard let sqlite else { fatalError("a SQLite-only step ran on \(kind)") }
        return sqlite
    }

    /// Every row of a table, through the store.
    func rows<R: StoredRow>(_ type: R.Type) async throws -> [R] {
        try await service.store.read { tx in try await tx.fetchAll(type, [:]) }
    }

    /// Audit rows, oldest first.
    func auditRows() async throws -> [AuditEventRow] {
        try await rows(AuditEventRow.self).sorted { ($0.id ?? 0) < ($1.id ?? 0) }
    }

    /// PIN credentials ordered by user id.
    func pinCredentials() async throws -> [PINCredentialRow] {
        try await rows(PINCredentialRow.self).sorted { $0.userId < $1.userId }
    }

    func count(_ table: String) async throws -> Int {
        try await integers("SELECT COUNT(*) FROM \"\(table)\"").first ?? 0
    }

    /// Runs one SQL statement outside the store's operations (a raw session, as an attacker with SQL
    /// access or an operator would). Throws the driver's own error.
    func execute(_ sql: String) async throws {
        switch kind {
        case .sqlite: try await database.pool.write { db in try db.execute(sql: sql) }
        case .postgres: try await postgres!.client.query(PostgresQuery(unsafeSQL: sql))
        }
    }

    /// The first column of every row `sql` returns, as integers.
    func integers(_ sql: String) async throws -> [Int] {
        switch kind {
        case .sqlite: return try await database.pool.read { db in try Int.fetchAll(db, sql: sql) }
        case .postgres: return try await postgres!.client.query(PostgresQuery(unsafeSQL: sql)).collect().map { try $0.decode(Int.self) }
        }
    }

    /// Makes the next statement of `event` ("INSERT", "DELETE") on `table` fail, until `removeFailure`.
    func injectFailure(before event: String, on table: String) async throws {
        switch kind {
        case .sqlite:
            try await execute("CREATE TEMP TRIGGER injected_\(table) BEFORE \(event) ON main.\"\(table)\" BEGIN SELECT RAISE(ABORT, 'injected'); END")
        case .postgres:
            try await execute("CREATE OR REPLACE FUNCTION injected_failure() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$")
            try await execute("CREATE TRIGGER injected_\(table) BEFORE \(event) ON \"\(table)\" FOR EACH ROW EXECUTE FUNCTION injected_failure()")
        }
    }

    func removeFailure(on table: String) async throws {
        switch kind {
        case .sqlite: try await execute("DROP TRIGGER injected_\(table)")
        case .postgres: try await execute("DROP TRIGGER injected_\(table) ON \"\(table)\"")
        }
    }

    /// Every table's content as text (PostgreSQL: each row as JSON, bytea as hex; SQLite: each row's
    /// columns, blobs as UTF-8 where they decode), to look for values that must be gone.
    func dumpAllTables() async throws -> String {
        switch kind {
        case .sqlite:
            return try await database.pool.read { db in
                var out = ""
                for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
                    for row in try Row.fetchAll(db, sql: "SELECT * FROM \"\(table)\"") {
                        for value in row.databaseValues { out += value.description + " " }
                        out += "\n"
                    }
                }
                return out
            }
        case .postgres:
            let client = postgres!.client
            var out = ""
            let tables = try await client.query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            ).collect().map { try $0.decode(String.self) }
            for table in tables {
                let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM \"\(table)\" t")).collect()
                for row in rows { out += try row.decode(String.self) + "\n" }
            }
            return out
        }
    }

    /// A signed-in Apple token for a nonce freshly issued by the service.
    func appleToken(sub: String = "000123.apple.user", overrides: [String: Any] = [:], header: [String: Any]? = nil) async throws -> (token: String, nonce: String) {
        let nonce = try await service.beginAppleSignIn()
        return (apple.token(AppleFixture.claims(sub: sub, rawNonce: nonce, now: clock.now, overrides: overrides), header: header), nonce)
    }

    /// An account with a PIN, signed in at the `pin` level.
    func pinUser(_ name: String = "alice", pin: String = "4826") async throws -> SessionTokens {
        try await service.register(username: name, pin: pin, source: .inProcess)
    }
}

extension OperatorCredential {
    static let testToken = "op_test_operator_token"
    /// The operator every `Harness` accepts.
    static let testOperator = OperatorCredential(token: testToken)
}

extension AppleFixture {
    /// RSA key generation is slow in debug builds: one key for the whole suite.
    private static let cached = Mutex<AppleFixture?>(nil)
    static func shared() throws -> AppleFixture {
        try cached.withLock { value in
            if let value { return value }
            let made = try AppleFixture()
            value = made
            return made
        }
    }
}

/// The error a call throws, as an `IdentityError` (failing the test if it throws something else or nothing).
func identityError(_ body: () async throws -> some Any, sourceLocation: Testing.SourceLocation = #_sourceLocation) async -> IdentityError? {
    do {
        _ = try await body()
        Issue.record("expected an IdentityError, got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as IdentityError {
        return error
    } catch {
        Issue.record("expected an IdentityError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension PostgresStore {
    /// The plans PostgreSQL gives `statements` on a large table (`EXPLAIN` with sequential scans off, in a transaction
    /// rolled back): an empty test table is read whole whatever its indexes.
    func plansOnALargeTable(_ statements: [String]) async throws -> [String] {
        try await withConnection { connection in
            try await connection.query("BEGIN", logger: TestPostgres.quietLogger)
            try await connection.query("SET LOCAL enable_seqscan = off", logger: TestPostgres.quietLogger)
            var plans: [String] = []
            for sql in statements {
                let lines = try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN " + sql), logger: TestPostgres.quietLogger).collect()
                plans.append(try lines.map { try $0.decode(String.self) }.joined(separator: "\n"))
            }
            try await connection.query("ROLLBACK", logger: TestPostgres.quietLogger)
            return plans
        }
    }
}
