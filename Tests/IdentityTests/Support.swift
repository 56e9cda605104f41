import Crypto
import Foundation
import GRDB
import PolicyModel
import Synchronization
import Testing
import _CryptoExtras

@testable import Identity

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

/// A service on a fresh database in a temporary folder, with a test clock and Apple keys.
struct Harness {
    let dir: URL
    let database: AppDatabase
    let service: IdentityService
    let clock: TestClock
    let apple: AppleFixture
    let fetcher: StaticJWKSFetcher

    static let testRounds = 1_000

    init(configure: (inout IdentityConfiguration) -> Void = { _ in }) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        database = try AppDatabase(path: dir.appendingPathComponent("identity.sqlite").path)
        clock = TestClock()
        apple = try AppleFixture.shared()
        fetcher = StaticJWKSFetcher(try AppleFixture.jwks([apple]))
        var config = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: [AppleFixture.clientId]))
        config.pin = .unsafeForTesting(rounds: Harness.testRounds)
        config.operatorTokenDigests = [OperatorCredential.digest(of: OperatorCredential.testToken)]
        configure(&config)
        service = IdentityService(store: SQLiteStore(database), configuration: config, jwksFetcher: fetcher, now: clock.source)
    }

    /// Audit rows, oldest first.
    func auditRows() throws -> [AuditEventRow] {
        try database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM auditEvent ORDER BY id").map { try RowBox<AuditEventRow>(row: $0).value } }
    }

    func count(_ table: String) throws -> Int {
        try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\(table)\"")! }
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
