import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// The operator console's routes (issue 43) over the router: find a user made through the public API, the user's page,
/// explain a decision for them now and from a decision record, grant a role, record and end a subscription, end a
/// session and sign out everywhere, the policy page; every route refused without the operator credential; the console's
/// pages only with `--console`, with their headers.
@Suite(.startsServers) struct ConsoleRouteTests {
    static let operatorToken = "operator-console-secret-0123456789"

    /// A role-gated action added to research-crawler, so one set has tiers, products and app roles (named outside
    /// MimiSupply's four, which the stores once required).
    static let supportFile = """
        appRoles:
          support: {name: Support}
          auditor: {name: Auditor}
        resources:
          helpdesk:
            actions:
              view_tickets: {appRoles: [support]}

        """

    static func server(console: Bool = false) async throws -> TestServer {
        let t = try TestServer {
            $0.decisionLog = .all
            $0.console = console
            // The 401 walk presents dozens of wrong credentials from one client: past the throttle they would be 429s.
            $0.signInLimit = RateLimit(requests: 10_000, window: 60)
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken)
        }
        try t.write("support.yaml", supportFile)
        guard case .installed = await t.server.reloader.reload() else { throw CancellationError() }
        return t
    }

    /// Every console route with a body it accepts: what the 401 test walks.
    static func routes(user: String, session: String) -> [(HTTPRequest.Method, String, String?)] {
        [
            (.get, "/v1/operator/users?q=someone", nil),
            (.get, "/v1/operator/users/\(user)", nil),
            (.post, "/v1/operator/users/\(user)/explain", #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#),
            (.post, "/v1/operator/users/\(user)/decisions/1/explain", nil),
            (.delete, "/v1/operator/users/\(user)/sessions/\(session)", nil),
            (.post, "/v1/operator/users/\(user)/signout-everywhere", nil),
            (.delete, "/v1/operator/users/\(user)/subscription", nil),
            (.put, "/v1/operator/users/\(user)/subscription", #"{"productId": "com.researchapp.pro.monthly"}"#),
            (.put, "/v1/operator/users/\(user)/roles", #"{"roles": ["support"]}"#),
            (.get, "/v1/operator/policy", nil),
            (.get, "/v1/operator/decisions", nil),
            (.get, "/v1/operator/audit", nil),
        ]
    }

    @Test func findExplainAndFixAUser() async throws {
        let t = try await Self.server()
        let op = bearer(Self.operatorToken)
        try await t.app.test(.router) { client in
            let registered = try await client.execute(
                uri: "/v1/auth/pin/register", method: .post, body: body(#"{"username": "mira", "pin": "482615"}"#)
            ) { $0.object }
            let (token, userId) = (try #require(registered["accessToken"] as? String), try #require(registered["userId"] as? String))
            let other = try await client.execute(uri: "/v1/auth/pin/signin", method: .post, body: body(#"{"username": "mira", "pin": "482615"}"#)) { r in
                try #require(r.object["accessToken"] as? String)
            }
            // A denial the user saw, recorded in the decision log.
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(token), body: body(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#)) { r in
                #expect(r.object["reason"] as? String == "requires_upgrade")
            }

            // Find by username; the page.
            try await client.execute(uri: "/v1/operator/users?q=mira", method: .get, headers: op) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect(r.headers[.cacheControl] == "no-store")
                let users = try #require(r.object["users"] as? [[String: Any]])
                #expect(users.count == 1 && users.first?["id"] as? String == userId && users.first?["matchedBy"] as? String == "username")
            }
            let page = try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: op) { r in
                #expect(r.status == .ok, "\(r.text)")
                return r.object
            }
            let sessions = try #require(page["sessions"] as? [[String: Any]])
            #expect(sessions.count == 2 && sessions.allSatisfy { $0["live"] as? Bool == true && $0["method"] as? String == "pin" })
            #expect((page["credentials"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["pin"])
            #expect((page["declaredRoles"] as? [String]).map(Set.init) == ["support", "auditor"])
            #expect((page["tier"] as? [String: Any])?["source"] as? String == "none")
            let text = try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: op) { $0.text }
            #expect(!text.contains(token) && !text.contains(other) && !text.contains("482615"), "no token or PIN on the page")

            // Why was this denied: the same answer the user got, with its trace; then from the decision record.
            let explain = #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#
            try await client.execute(uri: "/v1/operator/users/\(userId)/explain", method: .post, headers: op, body: body(explain)) { r in
                #expect(r.status == .ok, "\(r.text)")
                let e = try #require(r.object["explanation"] as? [String: Any])
                #expect(e["reason"] as? String == "requires_upgrade" && (e["trace"] as? [Any])?.isEmpty == false)
                #expect(r.object["session"] as? String != nil)
                #expect(((r.object["request"] as? [String: Any])?["subject"] as? [String: Any])?["id"] as? String == userId)
            }
            // A subject in the body changes nothing: the subject is the user's.
            let named = #"{"subject": {"id": "someone-else", "tier": "team"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
            try await client.execute(uri: "/v1/operator/users/\(userId)/explain", method: .post, headers: op, body: body(named)) { r in
                #expect((r.object["explanation"] as? [String: Any])?["reason"] as? String == "requires_upgrade", "\(r.text)")
                #expect(((r.object["request"] as? [String: Any])?["subject"] as? [String: Any])?["id"] as? String == userId)
            }
            let recordId = try await client.execute(uri: "/v1/operator/decisions?user=\(userId)", method: .get, headers: op) { r in
                try #require((r.object["decisions"] as? [[String: Any]])?.first?["id"] as? Int)
            }
            // Record a subscription: the same record explained again now is allowed, and says what was recorded.
            try await client.execute(
                uri: "/v1/operator/users/\(userId)/subscription", method: .put, headers: op, body: body(#"{"productId": "com.researchapp.pro.monthly"}"#)
            ) { r in #expect(r.status == .noContent, "\(r.text)") }
            try await client.execute(uri: "/v1/operator/users/\(userId)/decisions/\(recordId)/explain", method: .post, headers: op) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect((r.object["explanation"] as? [String: Any])?["decision"] as? String == "allow")
                #expect((r.object["recorded"] as? [String: Any])?["reason"] as? String == "requires_upgrade")
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)/decisions/999999/explain", method: .post, headers: op) { r in
                #expect(r.status == .notFound && r.object["field"] as? String == "decisionId")
            }

            // A role the set declares changes the decision; one it does not is refused naming it.
            let tickets = #"{"action": "view_tickets", "resource": {"type": "helpdesk"}}"#
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(token), body: body(tickets)) { r in
                #expect(r.object["reason"] as? String == "role_required")
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)/roles", method: .put, headers: op, body: body(#"{"roles": ["support"]}"#)) { r in
                #expect(r.status == .noContent, "\(r.text)")
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)/roles", method: .put, headers: op, body: body(#"{"roles": ["root"]}"#)) { r in
                #expect(r.status == .badRequest && r.object["field"] as? String == "roles[0]")
            }
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(token), body: body(tickets)) { r in
                #expect(r.object["decision"] as? String == "allow")
            }

            // End one session: its next decision is refused; the other still works; then sign out everywhere.
            let otherSession = try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: op) { r in
                try #require((r.object["sessions"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.first)
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)/sessions/\(otherSession)", method: .delete, headers: op) { r in
                #expect(r.status == .noContent)
            }
            let refused = try await [token, other].asyncMap { access in
                try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(tickets)) { r in
                    r.object["reason"] as? String == "unauthenticated"
                }
            }
            #expect(refused.filter { $0 }.count == 1, "exactly the ended session is refused")
            try await client.execute(uri: "/v1/operator/users/\(userId)/signout-everywhere", method: .post, headers: op) { r in
                #expect(r.status == .ok && r.object["ended"] as? Int == 1, "\(r.text)")
            }
            for access in [token, other] {
                try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(tickets)) { r in
                    #expect(r.object["reason"] as? String == "unauthenticated")
                }
            }
            // No live session: the explanation is what the user's app gets now.
            try await client.execute(uri: "/v1/operator/users/\(userId)/explain", method: .post, headers: op, body: body(explain)) { r in
                #expect((r.object["explanation"] as? [String: Any])?["reason"] as? String == "unauthenticated")
                #expect(r.object["session"] is NSNull)
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)/subscription", method: .delete, headers: op) { r in
                #expect(r.status == .noContent)
            }
            // The audit trail names the operator on each of its writes.
            try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: op) { r in
                let audit = try #require(r.object["audit"] as? [[String: Any]])
                let byOperator = Set(audit.filter { ($0["method"] as? String)?.hasPrefix("operator:") == true }.compactMap { $0["kind"] as? String })
                #expect(byOperator == ["roles_changed", "subscription_changed", "sessions_revoked", "sign_out_everywhere"], "\(audit)")
                #expect(!r.text.contains(Self.operatorToken))
            }

            // The policy page: the active version, roles, products, the decision counts.
            try await client.execute(uri: "/v1/operator/policy", method: .get, headers: op) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect((r.object["active"] as? [String: Any])?["hash"] as? String == t.server.service.policy.contentHash)
                #expect((r.object["products"] as? [String: String])?["com.researchapp.pro.monthly"] == "pro")
                let counts = try #require((r.object["decisions"] as? [String: Any])?["counts"] as? [[String: Any]])
                #expect(counts.contains { $0["action"] as? String == "view_tickets" && $0["reason"] as? String == "role_required" && $0["count"] as? Int == 1 })
            }
            try await client.execute(uri: "/v1/operator/policy?x=1", method: .get, headers: op) { r in
                #expect(r.status == .badRequest && r.object["field"] as? String == "x")
            }
        }
    }

    /// Each session on the user's page says what its sign-in said about the device (`Gatehouse-Device` and the
    /// User-Agent's product), a hostile name as the characters sent, a silent sign-in as null; a bad name is refused
    /// naming the header. A decision record's keyed pseudonym (`u-...`, as `GET /v1/operator/decisions` shows it)
    /// finds the user.
    @Test func sessionsShowTheirDeviceAndADecisionPseudonymFindsTheUser() async throws {
        let t = try await Self.server()
        let op = bearer(Self.operatorToken)
        let device = HTTPField.Name("Gatehouse-Device")!
        try await t.app.test(.router) { client in
            let registered = try await client.execute(
                uri: "/v1/auth/pin/register", method: .post, headers: [device: "iPhone15,2", .userAgent: "ResearchApp/1.4.2 CFNetwork/1496.0.7 Darwin/23.5.0"],
                body: body(#"{"username": "mira", "pin": "482615"}"#)
            ) { $0.object }
            let (token, userId) = (try #require(registered["accessToken"] as? String), try #require(registered["userId"] as? String))
            try await client.execute(
                uri: "/v1/auth/pin/signin", method: .post, headers: [device: "<img src=x onerror=alert(1)>"], body: body(#"{"username": "mira", "pin": "482615"}"#)
            ) { r in #expect(r.status == .ok, "\(r.text)") }
            try await client.execute(uri: "/v1/auth/pin/signin", method: .post, body: body(#"{"username": "mira", "pin": "482615"}"#)) { r in
                #expect(r.status == .ok)
            }
            for bad in [String(repeating: "x", count: 65), "enrolled device kitchen-ipad"] {
                try await client.execute(uri: "/v1/auth/anonymous", method: .post, headers: [device: bad]) { r in
                    #expect(r.status == .badRequest && r.object["field"] as? String == "Gatehouse-Device", "\(bad): \(r.text)")
                }
            }
            try await client.execute(uri: "/v1/operator/users/\(userId)", method: .get, headers: op) { r in
                #expect(r.status == .ok, "\(r.text)")
                let devices = try #require(r.object["sessions"] as? [[String: Any]]).map { $0["device"] as? String ?? "null" }
                #expect(devices.sorted() == ["<img src=x onerror=alert(1)>", "iPhone15,2 · ResearchApp/1", "null"].sorted(), "\(devices)")
            }

            // A decision record's pseudonym, as the operator's decision list shows it, finds the user.
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(token), body: body(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#)) { r in
                #expect(r.object["reason"] as? String == "requires_upgrade")
            }
            let pseudonym = try await client.execute(uri: "/v1/operator/decisions?user=\(userId)", method: .get, headers: op) { r in
                try #require((r.object["decisions"] as? [[String: Any]])?.first?["subject"] as? String)
            }
            #expect(pseudonym.hasPrefix("u-"))
            try await client.execute(uri: "/v1/operator/users?q=\(pseudonym)", method: .get, headers: op) { r in
                let users = try #require(r.object["users"] as? [[String: Any]], "\(r.text)")
                #expect(users.map { $0["id"] as? String } == [userId] && users.first?["matchedBy"] as? String == "decisionPseudonym")
            }
        }
    }

    /// Once a client has spent its failed operator credentials, every operator request from it is 429, the right
    /// credential too, with the same answer as a wrong one: a throttled client learns nothing about what it sends, so
    /// guessing stays at the throttle's rate. Other clients are not throttled by its failures (docs/console.md).
    @Test func aThrottledClientIsRefusedTheRightCredentialTooAndLearnsNothing() async throws {
        let t = try TestServer {
            $0.signInLimit = RateLimit(requests: 3, window: 3_600)
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken)
        }
        try await t.app.test(.router) { client in
            // Before the throttle: the right credential works.
            try await client.execute(uri: "/v1/operator/policy", method: .get, headers: bearer(Self.operatorToken)) { r in #expect(r.status == .ok) }
            for _ in 0..<3 {
                try await client.execute(uri: "/v1/operator/policy", method: .get, headers: bearer("operator-console-secret-wrong-000000")) { r in
                    #expect(r.status == .unauthorized)
                }
            }
            var answers: [String] = []
            for token in ["operator-console-secret-wrong-000000", Self.operatorToken] {
                answers.append(
                    try await client.execute(uri: "/v1/operator/users?q=mira", method: .get, headers: bearer(token)) { r in
                        #expect(r.status == .tooManyRequests, "\(r.text)")
                        #expect(r.object["code"] as? String == "throttled" && Int(r.headers[.retryAfter] ?? "") ?? 0 > 0)
                        return "\(r.status) \(r.object["code"] ?? "") \(r.object["detail"] ?? "")"
                    })
            }
            #expect(answers.count == 2 && answers[0] == answers[1], "the right and a wrong credential answer alike: \(answers)")
            // The throttle is this client's: another address is not refused for its failures.
            #expect(t.server.operatorLimiter.wait("198.51.100.7") == nil)
        }
    }

    @Test func everyConsoleRouteNeedsTheOperatorCredential() async throws {
        let t = try await Self.server(console: true)
        try await t.app.test(.router) { client in
            let signedIn = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
            let (token, userId) = (try #require(signedIn["accessToken"] as? String), try #require(signedIn["userId"] as? String))
            for (method, uri, text) in Self.routes(user: userId, session: "s") {
                for headers in [HTTPFields(), bearer(token), bearer("operator-console-secret-012345678X")] {
                    try await client.execute(uri: uri, method: method, headers: headers, body: text.map(body)) { r in
                        #expect(r.status == .unauthorized, "\(method) \(uri): \(r.status)")
                        #expect(r.object["code"] as? String == "operator_credential_required")
                    }
                }
            }
            // The user is untouched.
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(token)) { r in #expect(r.status == .ok) }
        }
    }

    @Test func theConsolePagesOnlyWithConsoleAndWithTheirHeaders() async throws {
        let off = try await Self.server()
        try await off.app.test(.router) { client in
            for path in ["/console", "/console/console.js", "/console/console.css"] {
                try await client.execute(uri: path, method: .get) { r in #expect(r.status == .notFound, "\(path)") }
            }
        }
        let on = try await Self.server(console: true)
        try await on.app.test(.router) { client in
            for (path, type) in [("/console", "text/html"), ("/console/console.js", "text/javascript"), ("/console/console.css", "text/css")] {
                try await client.execute(uri: path, method: .get) { r in
                    #expect(r.status == .ok)
                    #expect(r.headers[.contentType]?.hasPrefix(type) == true)
                    let csp = r.headers[.contentSecurityPolicy] ?? ""
                    #expect(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"))
                    #expect(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"))
                    #expect(r.headers[.cacheControl] == "no-store")
                    #expect(r.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                    #expect(!r.text.contains("http://") && !r.text.contains("https://"), "no other origin")
                    #expect(!r.text.contains(Self.operatorToken))
                }
            }
            try await client.execute(uri: "/console", method: .get) { r in
                #expect(!r.text.contains("<script>") && r.text.contains(#"<script src="/console/console.js""#), "no inline script")
                #expect(!r.text.contains("style="), "no inline style")
            }
            try await client.execute(uri: "/console/console.js", method: .get) { r in
                #expect(!r.text.contains("innerHTML") && !r.text.contains("outerHTML") && !r.text.contains("document.write") && !r.text.contains("eval("))
                #expect(r.text.contains("sessionStorage") && !r.text.contains("localStorage") && !r.text.contains("document.cookie"))
            }
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
