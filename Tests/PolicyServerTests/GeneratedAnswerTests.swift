import Foundation
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
@testable import PolicyServer
import Testing
import Yams

/// Each converted route answers byte for byte as its hand-written form: the generated route (the server's router) and
/// the controller's method registered by hand (`RouteBuilder.on`, behind the same `ProblemMiddleware`) over one server,
/// for the same requests: status, every header, every byte of the body. The requests take each road the hand-written
/// readers have (unknown query parameters, malformed values, a malformed `Accept`, NDJSON, no credential), so a
/// generated decoder that refused or read something first would show here.
@Suite(.startsServers) struct GeneratedAnswerTests {
    static let token = "operator-token-of-the-generated-answers"

    /// The converted routes as they were registered by hand before.
    static func handWritten(_ server: GatehouseServer) -> Router<ServerContext> {
        let router = Router(context: ServerContext.self)
        let allowed = AllowedMethods()
        router.add(middleware: ProblemMiddleware(server: server, allowed: allowed))
        let routes = RouteBuilder(router: router, server: server, allowed: allowed)
        let logs = LogController(server: server)
        let console = ConsoleController(server: server)
        routes.on(.get, "/v1/operator/decisions", logs.decisions)
        routes.on(.get, "/v1/operator/audit", logs.audit)
        routes.on(.get, "/v1/operator/shadow", logs.shadow)
        routes.on(.get, "/v1/operator/users", console.findUsers)
        routes.on(.get, "/v1/operator/users/{id}", console.user)
        routes.on(.post, "/v1/operator/users/{id}/signout-everywhere", console.signOutEverywhere)
        routes.on(.get, "/v1/operator/policy", console.policy)
        return router
    }

    struct Answer: Equatable, CustomStringConvertible {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: [UInt8]
        var description: String { "\(status.code) \(headers) \(String(decoding: body, as: UTF8.self))" }
    }

    static func answer(_ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ headers: HTTPFields) async throws -> Answer {
        try await client.execute(uri: uri, method: method, headers: headers) { r in Answer(status: r.status, headers: r.headers, body: Array(r.body.readableBytesView)) }
    }

    @Test func convertedRoutesAnswerAsTheirHandWrittenForm() async throws {
        let t = try TestServer { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.token) }
        let op = bearer(Self.token)
        let ndjson = op + [HTTPField(name: .accept, value: "application/x-ndjson")]
        let badAccept = op + [HTTPField(name: .accept, value: "not a media type;;q=x")]
        try await t.app.test(.router) { generated in
            // Two accounts, each with one session, and decisions in the log.
            var users: [String] = []
            for _ in 0..<2 {
                let access = try await generated.execute(uri: "/v1/auth/anonymous", method: .post) { r in r.object["accessToken"] as? String ?? "" }
                users.append(try await generated.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in r.object["userId"] as? String ?? "" })
                try await generated.execute(
                    uri: "/v1/decide", method: .post, headers: bearer(access), body: body(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#)
                ) { r in #expect(r.status == .ok) }
            }
            #expect(users.allSatisfy { !$0.isEmpty })
            let (user, other) = (users[0], users[1])
            let requests: [(HTTPRequest.Method, String, HTTPFields)] = [
                (.get, "/v1/operator/decisions", op), (.get, "/v1/operator/decisions?limit=1", op), (.get, "/v1/operator/decisions", ndjson),
                (.get, "/v1/operator/decisions?bogus=1", op), (.get, "/v1/operator/decisions?from=yesterday", op),
                (.get, "/v1/operator/decisions?limit=abc", op), (.get, "/v1/operator/decisions?limit=0", op),
                (.get, "/v1/operator/decisions?decision=maybe", op), (.get, "/v1/operator/decisions?user=\(user)", op),
                (.get, "/v1/operator/decisions?cursor=%%%", op), (.get, "/v1/operator/decisions", badAccept),
                (.get, "/v1/operator/audit", op), (.get, "/v1/operator/audit", ndjson), (.get, "/v1/operator/audit?outcome=bogus", op),
                (.get, "/v1/operator/audit?kind=sign_in&outcome=success", op), (.get, "/v1/operator/audit?user=nobody", op),
                (.get, "/v1/operator/audit?from=2020-01-01T00:00:00Z&limit=1", op), (.get, "/v1/operator/audit?to=never", op),
                (.get, "/v1/operator/audit", badAccept), (.get, "/v1/operator/audit?bogus=1", [:]),
                (.get, "/v1/operator/shadow", op), (.get, "/v1/operator/shadow?x=1", op),
                (.get, "/v1/operator/users?q=\(user)", op), (.get, "/v1/operator/users", op), (.get, "/v1/operator/users?q=a&extra=1", op),
                (.get, "/v1/operator/users/\(user)", op), (.get, "/v1/operator/users/\(user)?audit=3", op),
                (.get, "/v1/operator/users/\(user)?audit=x", op), (.get, "/v1/operator/users/nobody", op), (.get, "/v1/operator/users/\(user)", badAccept),
                (.get, "/v1/operator/policy", op), (.get, "/v1/operator/policy?x=1", op),
                (.post, "/v1/operator/users/nobody/signout-everywhere", op), (.post, "/v1/operator/users/nobody/signout-everywhere?x=1", op),
            ]
            try await Application(router: Self.handWritten(t.server)).test(.router) { handWritten in
                for (method, uri, headers) in requests {
                    let now = try await Self.answer(generated, method, uri, headers)
                    let before = try await Self.answer(handWritten, method, uri, headers)
                    #expect(now == before, "\(method) \(uri) \(headers)")
                }
                // A change: each form signs one account out everywhere (one session each), with the same answer.
                let now = try await Self.answer(generated, .post, "/v1/operator/users/\(user)/signout-everywhere", op)
                let before = try await Self.answer(handWritten, .post, "/v1/operator/users/\(other)/signout-everywhere", op)
                #expect(now == before)
                #expect(now.status == .ok && String(decoding: now.body, as: UTF8.self) == #"{"ended":1}"#, "\(now)")
            }
        }
    }

    /// `GeneratedRoutes.queries` is the spec's: for every generated operation, the query parameters docs/openapi.yaml
    /// declares are exactly the ones its hand-written reader takes (none for a route the table does not list).
    @Test func theQueryTableIsTheSpecs() throws {
        let root = Repository.root
        let spec = try #require(try Yams.load(yaml: String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)) as? [String: Any])
        let config = try #require(
            try Yams.load(yaml: String(contentsOf: root.appendingPathComponent("scripts/openapi-generator/openapi-server-config.yaml"), encoding: .utf8))
                as? [String: Any])
        let generated = Set(try #require((config["filter"] as? [String: Any])?["operations"] as? [String]))
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        var seen: Set<String> = []
        for (path, item) in paths {
            for (method, value) in item {
                guard let operation = value as? [String: Any], let id = operation["operationId"] as? String, generated.contains(id) else { continue }
                seen.insert(id)
                let parameters = (operation["parameters"] as? [[String: Any]]) ?? []
                let declared = Set(parameters.filter { $0["in"] as? String == "query" }.compactMap { $0["name"] as? String })
                let route = "\(method.uppercased()) \(path)"
                #expect(declared == GeneratedRoutes.queries[route] ?? [], "\(route): the spec declares \(declared.sorted())")
            }
        }
        #expect(seen == generated)
        #expect(Set(GeneratedRoutes.queries.keys).isSubset(of: Set(paths.flatMap { path, item in item.keys.map { "\($0.uppercased()) \(path)" } })))
    }
}
