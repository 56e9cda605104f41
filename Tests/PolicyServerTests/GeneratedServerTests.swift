import Crypto
import Foundation
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import Yams

/// The generated server side of the non-decision routes (Sources/PolicyServerAPI/Generated) against the spec and the
/// generator's configuration: generated from the spec as it is now, exactly the configured operations, never a decision
/// route, and each route registered once.
@Suite(.startsServers) struct GeneratedServerTests {
    static let spec = TestServer.root.appendingPathComponent("docs/openapi.yaml")
    static let generated = TestServer.root.appendingPathComponent("Sources/PolicyServerAPI/Generated")
    static let config = TestServer.root.appendingPathComponent("scripts/openapi-generator/openapi-server-config.yaml")
    /// The measured hot path (docs/performance.md): hand-written reader and writer, never generated.
    static let decisionOperations: Set<String> = ["postDecide", "postDecideBatch", "postExplain", "postCheck"]

    /// The committed code was generated from the spec as it is: scripts/generate-client.sh writes the spec's digest
    /// beside the code. Changed the spec? Run the script and commit what it writes.
    @Test func theGeneratedCodeIsFromTheCurrentSpec() throws {
        let digest = SHA256.hash(data: try Data(contentsOf: Self.spec)).map { String(format: "%02x", $0) }.joined()
        let stamp = try String(contentsOf: Self.generated.appendingPathComponent("openapi.yaml.sha256"), encoding: .utf8)
        #expect(stamp.trimmingCharacters(in: .whitespacesAndNewlines) == digest, "Sources/PolicyServerAPI/Generated is stale: run scripts/generate-client.sh")
    }

    /// The generated `APIProtocol` has one requirement per operation the configuration's filter lists, and none of them
    /// is a decision route.
    @Test func theGeneratedProtocolIsTheConfiguredOperations() throws {
        let configuration = try #require(try Yams.load(yaml: String(contentsOf: Self.config, encoding: .utf8)) as? [String: Any])
        let filter = try #require(configuration["filter"] as? [String: Any])
        let configured = Set(try #require(filter["operations"] as? [String]))
        let requirements = try generatedAPIRequirements(in: Self.generated)
        #expect(!configured.isEmpty)
        #expect(requirements == configured, "generated only: \(requirements.subtracting(configured).sorted()); configured only: \(configured.subtracting(requirements).sorted())")
        #expect(requirements.isDisjoint(with: Self.decisionOperations))
    }

    /// The generated decoder requires no request body and no query parameter (scripts/generate-client.sh generates the
    /// server side from the spec with both optional): `GeneratedRouteTransport` hands it neither, and the hand-written
    /// readers require them, with today's details.
    @Test func theGeneratedDecoderRequiresNoBodyOrQuery() throws {
        let server = try String(contentsOf: Self.generated.appendingPathComponent("Server.swift"), encoding: .utf8)
        for required in ["getRequiredRequestBody", "getRequiredQueryItem"] {
            #expect(!server.contains(required), "Server.swift calls \(required): the generated decoder would refuse every request")
        }
    }

    /// A route is registered once, by the generated handlers or by hand, never both.
    @Test func everyRouteIsRegisteredOnce() throws {
        let t = try TestServer()
        let routes = buildRouterAndTable(t.server).table.routes.map { "\($0.method) \($0.path)" }
        #expect(routes.count == Set(routes).count, "registered twice: \(Dictionary(grouping: routes) { $0 }.filter { $0.value.count > 1 }.keys.sorted())")
    }

    /// A generated route answers as its hand-written form did: problem+json with the same codes and headers (401 with
    /// `WWW-Authenticate`, 404, 405 with `Allow`, 415), and 204 with no body once the change is made.
    @Test func aGeneratedRouteAnswersAsBefore() async throws {
        let token = "operator-token-of-the-generated-routes"
        let t = try TestServer { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: token) }
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/operator/users/nobody/pin-unlock", method: .post) { r in
                #expect(r.status == .unauthorized)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.headers[.wwwAuthenticate] == "Bearer")
                #expect(r.object["code"] as? String == "operator_credential_required")
            }
            try await client.execute(uri: "/v1/operator/users/nobody/pin-unlock", method: .post, headers: bearer(token)) { r in
                #expect(r.status == .notFound)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.object["code"] as? String == "not_found")
            }
            try await client.execute(uri: "/v1/operator/users/nobody/pin-unlock", method: .get, headers: bearer(token)) { r in
                #expect(r.status == .methodNotAllowed)
                #expect(r.headers[.allow] == "POST")
            }
            var headers = bearer(token)
            headers[.contentType] = "text/plain"
            try await client.execute(uri: "/v1/operator/users/nobody/pin-unlock", method: .post, headers: headers) { r in
                #expect(r.status == .unsupportedMediaType)
            }
            let access = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in r.object["accessToken"] as? String ?? "" }
            let userId = try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in r.object["userId"] as? String ?? "" }
            #expect(!userId.isEmpty)
            try await client.execute(uri: "/v1/operator/users/\(userId)", method: .delete, headers: bearer(token)) { r in
                #expect(r.status == .noContent)
                #expect(r.body.readableBytes == 0)
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in #expect(r.status == .unauthorized) }
        }
    }

    /// The console's generated routes answer 204 with the console's headers, the same as its hand-written JSON answers
    /// (`ConsolePages.protect`), though the spec does not declare them: `GeneratedRouteTransport` adds them.
    @Test func theConsolesGeneratedRoutesCarryItsHeaders() async throws {
        let token = "operator-token-of-the-generated-routes"
        let t = try TestServer { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: token) }
        let names: [HTTPField.Name] = [.contentSecurityPolicy, .cacheControl] + ["X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"].map { HTTPField.Name($0)! }
        try await t.app.test(.router) { client in
            let access = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in r.object["accessToken"] as? String ?? "" }
            let userId = try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in r.object["userId"] as? String ?? "" }
            let (handWritten, sessionId) = try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: bearer(token)) { r in
                (names.map { r.headers[$0] }, try #require((r.object["sessions"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.first))
            }
            #expect(handWritten.allSatisfy { $0 != nil } && handWritten[1] == "no-store")
            for uri in ["/v1/operator/users/\(userId)/sessions/\(sessionId)", "/v1/operator/users/\(userId)/subscription"] {
                try await client.execute(uri: uri, method: .delete, headers: bearer(token)) { r in
                    #expect(r.status == .noContent, "\(uri)")
                    #expect(r.body.readableBytes == 0)
                    #expect(names.map { r.headers[$0] } == handWritten, "\(uri)")
                }
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in #expect(r.status == .unauthorized) }
        }
    }
}
