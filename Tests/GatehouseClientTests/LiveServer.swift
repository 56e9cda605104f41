import Crypto
import Foundation
import GatehouseTestSupport
@testable import GatehouseClient
import OpenAPIRuntime
import OpenAPIURLSession
import Testing
import _CryptoExtras

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let packageRoot = Repository.root

/// A real `policy serve` on a free loopback port over a copy of a shipped policy set, a fresh SQLite database, an
/// operator credential and a Sign in with Apple key of the test's own; stopped by `stop()`.
final class LiveServer: @unchecked Sendable {
    static let operatorToken = "client-tests-operator-credential"
    static let appleClientId = "com.example.app"

    let process: RunningProgram
    let url: URL
    let dir: URL
    let apple: AppleKey

    /// The server's standard error, kept for a failing test's message (a file: a pipe nobody reads could fill and stall it).
    let errorLog: URL

    /// Starts `policy serve` on `policySet` with `environment` added (a short token lifetime, say).
    init(_ policySet: String, environment: [String: String] = [:], arguments: [String] = []) async throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let policies = dir.appendingPathComponent(policySet)
        try FileManager.default.copyItem(at: packageRoot.appendingPathComponent("policies/\(policySet)"), to: policies)
        apple = try AppleKey()
        let jwks = dir.appendingPathComponent("jwks.json")
        try apple.jwks().write(to: jwks)
        errorLog = dir.appendingPathComponent("server.log")
        let arguments =
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--policies", policies.path, "--database",
                dir.appendingPathComponent("identity.sqlite").path, "--apple-client-id", Self.appleClientId, "--apple-jwks", jwks.path,
            ] + arguments
        let environment = [
            "GATEHOUSE_OPERATOR_TOKEN": Self.operatorToken,
            // The flows make more sign-in and write requests from 127.0.0.1 than a person would in a minute.
            "GATEHOUSE_SIGNIN_LIMIT": "100000/60", "GATEHOUSE_WRITE_LIMIT": "100000/60", "GATEHOUSE_SOURCE_WRITE_LIMIT": "100000/60",
        ].merging(TestDeadlines.environment) { own, _ in own }.merging(environment) { _, given in given }
        let process = try await Program(Self.binary("policy"), arguments, environment: .only(environment)).start(errorLog: errorLog)
        self.process = process
        let line = try await process.nextLine(within: .seconds(60))
        guard line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            process.kill()
            throw ServerDidNotStart(line: line)
        }
        self.url = url
    }

    struct ServerDidNotStart: Error { var line: String }

    /// SIGTERM, a bounded wait, and the folder removed.
    func stop() async {
        await process.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    /// A client of this server with its own in-memory token store.
    func client(store: InMemoryTokenStore = InMemoryTokenStore(), refreshMargin: TimeInterval = 0) -> GatehouseClient {
        GatehouseClient(serverURL: url, tokenStore: store, refreshMargin: refreshMargin)
    }

    /// The generated client, for the operator routes an app never calls.
    var operatorAPI: Client {
        Client(
            serverURL: url, configuration: Configuration(dateTranscoder: ContractDateTranscoder()), transport: URLSessionTransport(),
            middlewares: [GatehouseMiddleware()])
    }

    /// Runs `call` with the operator credential as the bearer.
    func asOperator<T: Sendable>(_ call: @Sendable (Client) async throws -> T) async throws -> T {
        let api = operatorAPI
        return try await Bearer.$token.withValue(Self.operatorToken) { try await call(api) }
    }

    /// `GET /metrics`, the Prometheus text.
    func metrics() async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("metrics"))
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the counter line that starts with `prefix` (name and labels), 0 when absent.
    func counter(_ prefix: String) async throws -> Double {
        let text = try await metrics()
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    /// Successful refreshes, as the server counts them.
    func refreshes() async throws -> Int {
        Int(try await counter(#"gatehouse_signins_total{method="refresh",outcome="success"}"#))
    }

    static func binary(_ name: String) -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent(name)
    }
}

/// Runs `body` against a fresh server and stops the server however `body` ends.
func withServer(
    _ policySet: String, environment: [String: String] = [:], arguments: [String] = [], _ body: (LiveServer) async throws -> Void
) async throws {
    let server = try await LiveServer(policySet, environment: environment, arguments: arguments)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// An RSA key standing in for Apple's: its JWKS for `--apple-jwks`, and identity tokens signed with it.
struct AppleKey: Sendable {
    let key: _RSA.Signing.PrivateKey
    let kid = "client-test-key"

    init() throws { key = try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    func jwks() throws -> Data {
        let p = try key.publicKey.getKeyPrimitives()
        let keys = [["kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": base64URL(p.modulus), "e": base64URL(p.publicExponent)]]
        return try JSONSerialization.data(withJSONObject: ["keys": keys], options: [.sortedKeys])
    }

    /// The identity token Apple would give for `subject` after a request whose nonce was `nonceDigest` (SHA-256 hex).
    func identityToken(subject: String, nonceDigest: String, now: Date = Date()) throws -> String {
        let claims: [String: Any] = [
            "iss": "https://appleid.apple.com", "aud": LiveServer.appleClientId, "sub": subject, "iat": Int(now.timeIntervalSince1970),
            "exp": Int(now.timeIntervalSince1970) + 600, "nonce": nonceDigest, "email": "buyer@privaterelay.appleid.com",
            "is_private_email": "true", "email_verified": "true",
        ]
        func part(_ object: [String: Any]) throws -> String { base64URL(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) }
        let input = try part(["alg": "RS256", "kid": kid]) + "." + part(claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }
}

func base64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// The error `body` throws as a `GatehouseClientError`, or nil when it throws none.
func thrownClientError(_ body: () async throws -> Void) async -> GatehouseClientError? {
    do {
        try await body()
        return nil
    } catch {
        // The generated client's own errors (a test calling it directly) become the client's, as the actor's do.
        return clientError(error)
    }
}
