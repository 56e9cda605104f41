import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

@Suite(.startsServers) struct IdentityRouteTests {
    static let createSpace = #"{"action": "create_space", "resource": {"type": "onboarding"}}"#
    static let dashboard = #"{"action": "view_dashboard", "resource": {"type": "space", "ownerId": "someone"}}"#

    @Test func anonymousSignInThenDecideWithTheBearer() async throws {
        let t = try TestServer(policySet: "contacasal")
        try await t.app.test(.router) { client in
            let tokens = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                #expect(r.status == .created)
                return r.object
            }
            let access = try #require(tokens["accessToken"] as? String)
            #expect(tokens["refreshToken"] is String)
            #expect(tokens["accessExpiresAt"] is String)
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.createSpace)) { r in
                #expect(r.status == .ok)
                #expect(r.object["decision"] as? String == "allow")
            }
            // Anonymous counts as signed out for a space; the token was accepted, so no challenge beside the answer.
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.dashboard)) { r in
                #expect(r.object["reason"] as? String == "unauthenticated")
                #expect(r.headers[.wwwAuthenticate] == nil)
            }
            // The server builds the subject: one in the body as well is refused.
            let withSubject = #"{"subject": {"id": "x"}, "action": "create_space", "resource": {"type": "onboarding"}}"#
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(withSubject)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["code"] as? String == "subject_with_bearer")
            }
        }
    }

    @Test func aGarbageBearerIsUnauthenticatedAndAMalformedHeaderIs401() async throws {
        let t = try TestServer(policySet: "contacasal")
        try await t.app.test(.router) { client in
            // A signed-out subject's decision, with RFC 6750's challenge beside it on every decision route: the token
            // was refused, which the decision alone does not tell from an anonymous session's.
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer("gha_garbage"), body: body(Self.createSpace)) { r in
                #expect(r.status == .ok)
                #expect(r.object["decision"] as? String == "deny")
                #expect(r.object["reason"] as? String == "unauthenticated")
                #expect(r.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#)
                #expect(!r.text.contains("gha_garbage"))
            }
            let routes = [
                ("/v1/explain", Self.createSpace), ("/v1/decide/batch", #"{"requests": [\#(Self.createSpace)]}"#),
                ("/v1/check", #"{"actions": ["create_space"], "resource": {"type": "onboarding"}}"#),
            ]
            for (uri, text) in routes {
                try await client.execute(uri: uri, method: .post, headers: bearer("gha_garbage"), body: body(text)) { r in
                    #expect(r.status == .ok, "\(uri): \(r.text)")
                    #expect(r.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#, "\(uri)")
                }
                try await client.execute(uri: uri, method: .post, body: body(text)) { r in
                    #expect(r.headers[.wwwAuthenticate] == nil, "\(uri)")
                }
            }
            try await client.execute(uri: "/v1/decide", method: .post, headers: [.authorization: "Basic abc"], body: body(Self.createSpace)) { r in
                #expect(r.status == .unauthorized)
                #expect(r.object["code"] as? String == "unauthenticated")
                #expect(!r.text.contains("abc"))
            }
        }
    }

    @Test func refreshRotatesAndSignOutEndsTheSession() async throws {
        let t = try TestServer(policySet: "contacasal")
        try await t.app.test(.router) { client in
            let first = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
            let refresh = try #require(first["refreshToken"] as? String)
            let second = try await client.execute(uri: "/v1/auth/refresh", method: .post, body: body(#"{"refreshToken": "\#(refresh)"}"#)) { r in
                #expect(r.status == .ok)
                return r.object
            }
            let access = try #require(second["accessToken"] as? String)
            #expect(access != first["accessToken"] as? String)
            try await client.execute(uri: "/v1/auth/refresh", method: .post, body: body(#"{"refreshToken": "ghr_nonsense"}"#)) { r in
                #expect(r.status == .unauthorized)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(!r.text.contains("ghr_nonsense"))
            }
            try await client.execute(uri: "/v1/auth/refresh", method: .post, body: body(#"{}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "refreshToken")
            }
            try await client.execute(uri: "/v1/auth/signout", method: .post) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/auth/signout", method: .post, headers: bearer(access)) { r in
                #expect(r.status == .noContent)
            }
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.createSpace)) { r in
                #expect(r.object["reason"] as? String == "unauthenticated")
            }
        }
    }

    @Test func signInRoutesAreLimitedPerClientWithRetryAfter() async throws {
        let t = try TestServer(policySet: "contacasal") { $0.signInLimit = RateLimit(requests: 2, window: 3600) }  // an hour: no refill on a slow machine
        try await t.app.test(.router) { client in
            for _ in 0..<2 {
                try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in #expect(r.status == .created) }
            }
            try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                #expect(r.status == .tooManyRequests)
                #expect(r.object["code"] as? String == "throttled")
                #expect(Int(r.headers[.retryAfter] ?? "") ?? 0 >= 1)
            }
        }
    }

    @Test func aRestartKeepsEverySession() async throws {
        let first = try TestServer(policySet: "contacasal")
        let database = first.dir.appendingPathComponent("identity.sqlite")
        let tokens = try await first.app.test(.router) { client in
            try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
        }
        let access = try #require(tokens["accessToken"] as? String)
        let refresh = try #require(tokens["refreshToken"] as? String)
        let second = try TestServer(policySet: "contacasal", database: database)
        try await second.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.createSpace)) { r in
                #expect(r.object["decision"] as? String == "allow")
            }
            try await client.execute(uri: "/v1/auth/refresh", method: .post, body: body(#"{"refreshToken": "\#(refresh)"}"#)) { r in
                #expect(r.status == .ok)
            }
        }
    }
}

@Suite(.startsServers) struct RateLimiterTests {
    @Test func aBucketRefillsOverItsWindow() {
        let clock = Clock()
        let limiter = RateLimiter(limit: RateLimit(requests: 2, window: 10), now: { clock.now })
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") == 5)
        #expect(limiter.take("b") == nil)
        clock.advance(5)
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") != nil)
    }

    @Test func manyClientsDoNotGrowTheTableWithoutEnd() {
        let limiter = RateLimiter(limit: RateLimit(requests: 1, window: 60), maxClients: 100)
        for i in 0..<1_000 { #expect(limiter.take("client-\(i)") == nil) }
        // A client seen long ago may be forgotten, never one refused as over its limit by more than a refill.
        #expect(limiter.take("client-999") != nil)
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var t = Date(timeIntervalSince1970: 1_800_000_000)
        var now: Date { lock.withLock { t } }
        func advance(_ s: TimeInterval) { lock.withLock { t += s } }
    }
}

@Suite(.startsServers) struct AccountRouteTests {
    static let operatorToken = "operator-secret-0123456789"

    @Test func pinRegisterSignInAndStepUp() async throws {
        let t = try TestServer(policySet: "contacasal")
        try await t.app.test(.router) { client in
            let tokens = try await client.execute(uri: "/v1/auth/pin/register", method: .post, body: body(#"{"username": "ana", "pin": "4826"}"#)) { r in
                #expect(r.status == .created)
                return r.object
            }
            let access = try #require(tokens["accessToken"] as? String)
            try await client.execute(uri: "/v1/auth/pin/signin", method: .post, body: body(#"{"username": "ana", "pin": "7391"}"#)) { r in
                #expect(r.status == .unauthorized)
                #expect(r.object["code"] as? String == "invalid_credentials")
                #expect(!r.text.contains("7391"))
            }
            try await client.execute(uri: "/v1/auth/pin/verify", method: .post, headers: bearer(access), body: body(#"{"pin": "4826"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["method"] as? String == "pin")
            }
            try await client.execute(uri: "/v1/auth/pin/verify", method: .post, headers: bearer(access), body: body(#"{"pin": 1234}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "pin")
            }
            // The session is a space owner's: create a space, and a second user joins by its code.
            let space = try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(access), body: body(#"{"name": "Casa", "inviteRole": "partner"}"#)) { r in
                #expect(r.status == .created)
                return r.object
            }
            let code = try #require(space["shareCode"] as? String)
            let other = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
            let otherAccess = try #require(other["accessToken"] as? String)
            try await client.execute(uri: "/v1/spaces/join", method: .post, headers: bearer(otherAccess), body: body(#"{"shareCode": "\#(code)"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["resourceId"] as? String == space["resourceId"] as? String)
            }
            try await client.execute(uri: "/v1/me/privacy", method: .put, headers: bearer(access), body: body(#"{"analytics": true}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["analytics"] as? Bool == true)
                #expect(r.object["dataSharing"] as? String == "none")
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                #expect(r.status == .ok)
                #expect(r.object["userId"] as? String != nil)
                #expect(r.object["hasPIN"] as? Bool == true)  // registered with username + PIN above
                #expect((r.object["appleUserIds"] as? [Any])?.isEmpty == true)
                #expect(r.object.keys.contains("tier") && r.object.keys.contains("email"))
                #expect(!r.text.contains(access))
            }
            try await client.execute(uri: "/v1/me", method: .get) { r in #expect(r.status == .unauthorized) }
            try await client.execute(uri: "/v1/me/export", method: .get, headers: bearer(access)) { r in
                #expect(r.status == .ok)
                #expect(!r.text.contains(access))
            }
            try await client.execute(uri: "/v1/me", method: .delete, headers: bearer(access)) { r in #expect(r.status == .noContent) }
            try await client.execute(uri: "/v1/me/privacy", method: .get, headers: bearer(access)) { r in #expect(r.status == .unauthorized) }
        }
    }

    @Test func operatorRoutesNeedTheOperatorCredential() async throws {
        let t = try TestServer(policySet: "mimisupply") { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken) }
        try await t.app.test(.router) { client in
            let user = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
            let id = try #require(user["userId"] as? String)
            let roles = body(#"{"roles": ["driver"]}"#)
            try await client.execute(uri: "/v1/operator/users/\(id)/roles", method: .put, body: roles) { r in
                #expect(r.status == .unauthorized)
                #expect(r.object["code"] as? String == "operator_credential_required")
            }
            try await client.execute(uri: "/v1/operator/users/\(id)/roles", method: .put, headers: bearer("operator-secret-0123456780"), body: roles) { r in
                #expect(r.status == .unauthorized)
            }
            // A user's own access token is not an operator credential.
            try await client.execute(uri: "/v1/operator/users/\(id)/roles", method: .put, headers: bearer(user["accessToken"] as? String ?? ""), body: roles) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/operator/users/\(id)/roles", method: .put, headers: bearer(Self.operatorToken), body: roles) { r in
                #expect(r.status == .noContent)
            }
            try await client.execute(uri: "/v1/operator/apple-credential-state", method: .post, headers: bearer(Self.operatorToken), body: body(#"{"appleUserId": "a", "state": "gone"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "state")
            }
        }
    }

    /// App roles are the policy set's: MimiSupply declares driver; the research crawler declares none, so the
    /// same request is refused there naming the role, and the user keeps the roles they had.
    @Test func appRolesAreTheOnesThePolicySetDeclares() async throws {
        for (set, status) in [("mimisupply", HTTPResponse.Status.noContent), ("research-crawler", .badRequest)] {
            let t = try TestServer(policySet: set) { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken) }
            try await t.app.test(.router) { client in
                let user = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { $0.object }
                let id = try #require(user["userId"] as? String)
                try await client.execute(uri: "/v1/operator/users/\(id)/roles", method: .put, headers: bearer(Self.operatorToken), body: body(#"{"roles": ["driver"]}"#)) { r in
                    #expect(r.status == status, "\(set)")
                    if status == .badRequest { #expect(r.object["field"] as? String == "roles[0]") }
                }
            }
        }
    }

    @Test func withoutAConfiguredCredentialOperatorRoutesAreClosed() async throws {
        let t = try TestServer(policySet: "mimisupply")
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/operator/users/x/roles", method: .put, headers: bearer(Self.operatorToken), body: body(#"{"roles": []}"#)) { r in
                #expect(r.status == .unauthorized)
            }
        }
    }

    /// Issue 22: a product id the client names is no proof of payment; it changes no tier.
    @Test func aProductIdAloneSetsNoTier() async throws {
        let t = try TestServer()
        let (product, _) = try #require(t.server.service.policy.productTiers.sorted { $0.key < $1.key }.first)
        try await t.app.test(.router) { client in
            let user = try await client.execute(uri: "/v1/auth/pin/register", method: .post, body: body(#"{"username": "payer", "pin": "4826"}"#)) { $0.object }
            let access = try #require(user["accessToken"] as? String)
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"productId": "\#(product)"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "productId")
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                #expect(r.status == .ok)
                #expect(r.object["tier"] is NSNull)
            }
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#)) { r in
                #expect(r.object["decision"] as? String == "deny")
                #expect(r.object["reason"] as? String == "requires_upgrade")
            }
        }
    }
}
