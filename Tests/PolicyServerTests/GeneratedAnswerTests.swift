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

    /// The converted routes as they were registered by hand before (`Routes.swift`, r7 and r8).
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
        routes.on(.post, "/v1/operator/users/{id}/explain", console.explain)
        let lists = ListController(server: server)
        routes.on(.post, "/v1/plan", lists.plan)
        routes.on(.get, "/v1/resources", lists.resources)
        let sessions = SessionController(server: server)
        routes.on(.post, "/v1/auth/refresh", sessions.refresh)
        routes.on(.post, "/v1/auth/pin/register", sessions.registerPIN)
        routes.on(.post, "/v1/auth/pin/signin", sessions.signInPIN)
        routes.on(.post, "/v1/auth/apple", sessions.signInApple)
        let credentials = CredentialController(server: server)
        routes.on(.put, "/v1/auth/pin", credentials.setPIN)
        routes.on(.post, "/v1/auth/pin/change", credentials.changePIN)
        routes.on(.post, "/v1/auth/pin/verify", credentials.verifyPIN)
        routes.on(.post, "/v1/auth/apple/link", credentials.linkApple)
        routes.on(.post, "/v1/auth/apple/notifications", credentials.appleNotification)
        routes.on(.post, "/v1/auth/device/enroll", credentials.enrollDevice)
        routes.on(.post, "/v1/auth/device/challenge", credentials.deviceChallenge)
        routes.on(.post, "/v1/auth/device/verify", credentials.verifyDevice)
        let account = AccountController(server: server)
        routes.write(.put, "/v1/me/username", account.setUsername)
        routes.write(.put, "/v1/me/privacy", account.setPrivacy)
        let purchases = PurchaseController(server: server)
        routes.write(.post, "/v1/me/purchases", purchases.purchase)
        routes.on(.post, "/v1/app-store/notifications", purchases.notification)
        let spaces = SpaceController(server: server)
        routes.write(.post, "/v1/spaces", spaces.create)
        routes.write(.post, "/v1/spaces/join", spaces.join)
        let operators = OperatorController(server: server)
        routes.on(.post, "/v1/operator/apple-credential-state", operators.appleCredentialState)
        routes.on(.put, "/v1/operator/users/{id}/roles", operators.setRoles)
        routes.on(.put, "/v1/operator/users/{id}/subscription", operators.setSubscription)
        routes.on(.post, "/v1/operator/users/{id}/legacy-pin", operators.importLegacyPIN)
        routes.on(.post, "/v1/operator/users/{id}/usage", operators.userUsage)
        routes.on(.post, "/v1/operator/resources/{id}/usage", operators.resourceUsage)
        return router
    }

    struct Answer: Equatable, CustomStringConvertible {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: [UInt8]
        var description: String { "\(status.code) \(headers) \(String(decoding: body, as: UTF8.self))" }
    }

    static func answer(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ headers: HTTPFields, _ body: String? = nil
    ) async throws -> Answer {
        try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { r in
            Answer(status: r.status, headers: r.headers, body: Array(r.body.readableBytesView))
        }
    }

    /// Two anonymous accounts made through the generated routes: (user id, access token, refresh token) each.
    static func accounts(_ client: some TestClientProtocol) async throws -> [(user: String, access: String, refresh: String)] {
        var made: [(user: String, access: String, refresh: String)] = []
        for _ in 0..<2 {
            let (access, refresh) = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                (r.object["accessToken"] as? String ?? "", r.object["refreshToken"] as? String ?? "")
            }
            let user = try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in r.object["userId"] as? String ?? "" }
            made.append((user, access, refresh))
        }
        #expect(made.allSatisfy { !$0.user.isEmpty && !$0.access.isEmpty && !$0.refresh.isEmpty })
        return made
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

    /// The routes with a request body or a required query (r8): success and refusals (missing, unknown and mistyped fields,
    /// a body that is not JSON, one past the body limit, the wrong content type, no body, no bearer, no operator
    /// credential, unknown and missing parameters) answer byte for byte as before. A change is made once on each form,
    /// each on its own account, and compared with the other account's id read as the first's; answers with fresh
    /// tokens or ids (a refresh, a new space) are compared by status, headers but the length, and the body's fields.
    @Test func bodyAndQueryRoutesAnswerAsTheirHandWrittenForm() async throws {
        // The clock stands still, so an explanation's `context.now` is the same in both answers.
        let t = try TestServer(clockStoppedAt: Date(timeIntervalSince1970: 1_800_000_000)) {
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.token)
            $0.bodyLimit = 2_048
            $0.signInLimit = RateLimit(requests: 10_000, window: 60)
            $0.writeLimit = RateLimit(requests: 10_000, window: 60)
            $0.sourceWriteLimit = RateLimit(requests: 10_000, window: 60)
        }
        let json: HTTPFields = [.contentType: "application/json"]
        let text: HTTPFields = [.contentType: "text/plain"]
        let op = bearer(Self.token) + json
        let big = #"{"refreshToken": ""# + String(repeating: "x", count: 3_000) + #""}"#
        let asked = #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#
        try await t.app.test(.router) { generated in
            let accounts = try await Self.accounts(generated)
            let (user, other) = (accounts[0].user, accounts[1].user)
            let a = bearer(accounts[0].access) + json
            let requests: [(HTTPRequest.Method, String, HTTPFields, String?)] = [
                // Sign-in and credentials.
                (.post, "/v1/auth/refresh", json, "{}"), (.post, "/v1/auth/refresh", json, #"{"refreshToken": "bogus", "extra": 1}"#),
                (.post, "/v1/auth/refresh", json, #"{"refreshToken": 5}"#), (.post, "/v1/auth/refresh", json, "not json"),
                (.post, "/v1/auth/refresh", json, big), (.post, "/v1/auth/refresh", text, #"{"refreshToken": "bogus"}"#),
                (.post, "/v1/auth/refresh", json, nil), (.post, "/v1/auth/refresh", json, #"{"refreshToken": "bogus"}"#),
                (.post, "/v1/auth/pin/register", json, "{}"), (.post, "/v1/auth/pin/register", json, #"{"username": "someone", "pin": "1234", "x": 1}"#),
                (.post, "/v1/auth/pin/register", json, #"{"username": "someone", "pin": "1234"}"#),
                (.post, "/v1/auth/pin/signin", json, #"{"username": "someone"}"#),
                (.post, "/v1/auth/apple", json, "{}"), (.post, "/v1/auth/apple", json, #"{"identityToken": "x", "nonce": "y"}"#),
                (.put, "/v1/auth/pin", json, #"{"pin": "482915"}"#), (.put, "/v1/auth/pin", a, "{}"), (.put, "/v1/auth/pin", a, big),
                (.post, "/v1/auth/pin/change", a, "{}"), (.post, "/v1/auth/pin/verify", a, "{}"), (.post, "/v1/auth/pin/verify", json, #"{"pin": "482915"}"#),
                (.post, "/v1/auth/apple/link", json, "{}"), (.post, "/v1/auth/apple/link", a, "{}"),
                (.post, "/v1/auth/apple/notifications", json, "{}"), (.post, "/v1/auth/apple/notifications", json, #"{"signedPayload": "x"}"#),
                (.post, "/v1/auth/device/enroll", json, "{}"), (.post, "/v1/auth/device/enroll", a, "{}"),
                (.post, "/v1/auth/device/challenge", json, "{}"), (.post, "/v1/auth/device/verify", json, "{}"),
                // The account, purchases, spaces (under the write quota).
                (.put, "/v1/me/username", json, #"{"username": "someone"}"#), (.put, "/v1/me/username", a, "{}"),
                (.put, "/v1/me/username", a, #"{"username": 5}"#), (.put, "/v1/me/username", a, #"{"username": "a"}"#),
                (.put, "/v1/me/username", a, big), (.put, "/v1/me/username", bearer(accounts[0].access) + text, #"{"username": "someone"}"#),
                (.put, "/v1/me/privacy", a, #"{"bogus": true}"#), (.put, "/v1/me/privacy", a, #"{"analytics": "yes"}"#),
                (.post, "/v1/me/purchases", a, "{}"), (.post, "/v1/me/purchases", json, "{}"), (.post, "/v1/app-store/notifications", json, "{}"),
                (.post, "/v1/spaces", a, "{}"), (.post, "/v1/spaces", a, #"{"name": "n", "x": 1}"#),
                (.post, "/v1/spaces/join", a, "{}"), (.post, "/v1/spaces/join", a, #"{"shareCode": "0000000000"}"#),
                // The operator's writes and the console's search and explain.
                (.post, "/v1/operator/apple-credential-state", json, "{}"), (.post, "/v1/operator/apple-credential-state", op, "{}"),
                (.post, "/v1/operator/apple-credential-state", op, #"{"appleUserId": "nobody", "state": "revoked"}"#),
                (.put, "/v1/operator/users/\(user)/roles", op, "{}"), (.put, "/v1/operator/users/\(user)/roles", op, #"{"roles": 5}"#),
                (.put, "/v1/operator/users/\(user)/roles", op, #"{"roles": [], "x": 1}"#), (.put, "/v1/operator/users/nobody/roles", op, #"{"roles": []}"#),
                (.put, "/v1/operator/users/\(user)/roles", json, #"{"roles": []}"#), (.put, "/v1/operator/users/\(user)/roles", op, big),
                (.put, "/v1/operator/users/\(user)/subscription", op, "{}"),
                (.put, "/v1/operator/users/\(user)/subscription", op, #"{"productId": "p", "expiresAt": "never"}"#),
                (.post, "/v1/operator/users/\(user)/legacy-pin", op, "{}"), (.post, "/v1/operator/users/\(user)/usage", op, "{}"),
                (.post, "/v1/operator/users/nobody/usage", op, #"{"counter": "c"}"#), (.post, "/v1/operator/resources/r1/usage", op, "{}"),
                (.post, "/v1/operator/users/\(user)/explain", op, asked), (.post, "/v1/operator/users/\(user)/explain", op, "{}"),
                (.post, "/v1/operator/users/\(user)/explain?bogus=1", op, asked), (.post, "/v1/operator/users/\(user)/explain", json, asked),
                (.post, "/v1/operator/users/\(user)/explain?session=nope", op, asked), (.post, "/v1/operator/users/nobody/explain", op, asked),
                (.get, "/v1/operator/users?q=\(user)", op, nil), (.get, "/v1/operator/users", op, nil), (.get, "/v1/operator/users?q=a&extra=1", op, nil),
                (.get, "/v1/operator/users?q=a", json, nil),
                // Plans and resource lists.
                (.post, "/v1/plan", a, #"{"action": "ai_suggestions", "resourceType": "app"}"#), (.post, "/v1/plan", a, #"{"action": "ai_suggestions"}"#),
                (.post, "/v1/plan", a, #"{"action": "ai_suggestions", "resourceType": "app", "x": 1}"#), (.post, "/v1/plan", a, big),
                (.post, "/v1/plan", bearer(accounts[0].access) + text, #"{"action": "ai_suggestions", "resourceType": "app"}"#),
                (.get, "/v1/resources?type=app&action=view", [:], nil), (.get, "/v1/resources?type=app", a, nil),
                (.get, "/v1/resources?type=app&action=view", a, nil), (.get, "/v1/resources?type=app&action=view&bogus=1", a, nil),
                (.get, "/v1/resources?type=app&action=view&limit=abc", a, nil), (.get, "/v1/resources?type=app&type=b&action=view", a, nil),
            ]
            try await Application(router: Self.handWritten(t.server)).test(.router) { handWritten in
                var statuses: Set<Int> = []
                for (method, uri, headers, body) in requests {
                    let now = try await Self.answer(generated, method, uri, headers, body)
                    let before = try await Self.answer(handWritten, method, uri, headers, body)
                    #expect(now == before, "\(method) \(uri) \(headers) \(body ?? "")")
                    statuses.insert(now.status.code)
                }
                // The requests reach each kind of answer: success, refusals of the body and query, no credential,
                // unknown ids, past the limit, the wrong content type.
                #expect(statuses.isSuperset(of: [200, 400, 401, 404, 413, 415]), "\(statuses.sorted())")
                // Changes, each form on its own account: the same answer with the other account's id read as the first's.
                let b = bearer(accounts[1].access) + json
                let changes: [(HTTPRequest.Method, String, String, HTTPFields, HTTPFields, (String) -> String)] = [
                    (.put, "/v1/me/username", "/v1/me/username", a, b, { #"{"username": "changed-\#($0.prefix(8))"}"# }),
                    (.put, "/v1/me/privacy", "/v1/me/privacy", a, b, { _ in #"{"analytics": true, "dataSharing": "none"}"# }),
                    (.put, "/v1/operator/users/\(user)/roles", "/v1/operator/users/\(other)/roles", op, op, { _ in #"{"roles": []}"# }),
                    (.post, "/v1/operator/users/\(user)/usage", "/v1/operator/users/\(other)/usage", op, op, { _ in #"{"counter": "c1", "by": 2}"# }),
                ]
                for (method, uri, otherURI, headers, otherHeaders, body) in changes {
                    let now = try await Self.answer(generated, method, uri, headers, body(user))
                    var before = try await Self.answer(handWritten, method, otherURI, otherHeaders, body(other))
                    before = Answer(status: before.status, headers: before.headers, body: Array(String(decoding: before.body, as: UTF8.self).replacingOccurrences(of: other, with: user).utf8))
                    #expect(now == before, "\(method) \(uri)")
                    #expect(now.status.code < 300, "\(now)")
                }
                // Fresh tokens and ids: the same status, headers (the length aside) and fields.
                func shape(_ answer: Answer) -> String {
                    var headers = answer.headers
                    headers[.contentLength] = nil
                    let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
                    return "\(answer.status.code) \(headers) \(object.keys.sorted())"
                }
                let space = try await Self.answer(generated, .post, "/v1/spaces", a, #"{"name": "n"}"#)
                let spaceBefore = try await Self.answer(handWritten, .post, "/v1/spaces", b, #"{"name": "n"}"#)
                #expect(shape(space) == shape(spaceBefore) && space.status == .created, "\(space) \(spaceBefore)")
                let refreshed = try await Self.answer(generated, .post, "/v1/auth/refresh", json, #"{"refreshToken": "\#(accounts[0].refresh)"}"#)
                let refreshedBefore = try await Self.answer(handWritten, .post, "/v1/auth/refresh", json, #"{"refreshToken": "\#(accounts[1].refresh)"}"#)
                #expect(shape(refreshed) == shape(refreshedBefore) && refreshed.status == .ok, "\(refreshed) \(refreshedBefore)")
            }
        }
    }

    /// The write quota on a generated route answers as `RouteBuilder.write` did: two writes an account, the third a 429
    /// with the same `Retry-After` (the clock stands still), on any write route, and no bearer a 401 before the quota.
    @Test func theWriteQuotaAnswersAsItsHandWrittenForm() async throws {
        let t = try TestServer(clockStoppedAt: Date(timeIntervalSince1970: 1_800_000_000)) {
            $0.writeLimit = RateLimit(requests: 2, window: 3_600)
            $0.signInLimit = RateLimit(requests: 10_000, window: 60)
        }
        let json: HTTPFields = [.contentType: "application/json"]
        try await t.app.test(.router) { generated in
            let accounts = try await Self.accounts(generated)
            try await Application(router: Self.handWritten(t.server)).test(.router) { handWritten in
                let writes: [(HTTPRequest.Method, String, String)] = [
                    (.put, "/v1/me/privacy", #"{"analytics": true}"#), (.put, "/v1/me/privacy", #"{"analytics": false}"#),
                    (.put, "/v1/me/username", #"{"username": "quota-user"}"#), (.post, "/v1/spaces", #"{"name": "n"}"#),
                    (.post, "/v1/spaces/join", "{}"), (.post, "/v1/me/purchases", "{}"),
                ]
                for (index, (method, uri, body)) in writes.enumerated() {
                    let now = try await Self.answer(generated, method, uri, bearer(accounts[0].access) + json, body)
                    let before = try await Self.answer(handWritten, method, uri, bearer(accounts[1].access) + json, body)
                    #expect(now == before, "\(method) \(uri)")
                    #expect((now.status == .tooManyRequests) == (index >= 2), "\(method) \(uri): \(now)")
                }
                let now = try await Self.answer(generated, .put, "/v1/me/privacy", json, "{}")
                let before = try await Self.answer(handWritten, .put, "/v1/me/privacy", json, "{}")
                #expect(now == before && now.status == .unauthorized, "\(now)")
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
