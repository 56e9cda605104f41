import Foundation
@testable import GatehouseClient
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
import Synchronization
import Testing
import GatehouseTestSupport

/// Adds the task's bearer and nothing else: statuses and bodies reach the generated code as the server sent them.
struct BearerOnly: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token = Bearer.token { request.headerFields[.authorization] = "Bearer \(token)" }
        return try await next(request, body, baseURL)
    }
}

/// The generated client and a live server agree on every operation of docs/openapi.yaml: each operation is called
/// once, and its answer, success or problem, is one the spec documents and decodes into the generated types (an
/// undocumented status or a body that does not decode fails the test).
@Suite(.startsServers) struct OperationAgreementTests {
    final class Seen: Sendable {
        let ids = Mutex<Set<String>>([])
        let undocumented = Mutex<[String]>([])
    }

    @Test func everyOperationAnswersAsTheSpecSays() async throws {
        try await withServer("research-crawler") { server in
            let api = Client(
                serverURL: server.url, configuration: Configuration(dateTranscoder: ContractDateTranscoder()),
                transport: URLSessionTransport(), middlewares: [BearerOnly()])
            let seen = Seen()
            /// Runs one operation with `bearer`; records its id, and its answer when the spec does not document it.
            func call<T: Sendable>(_ id: String, bearer: String? = nil, _ body: @Sendable () async throws -> T) async throws -> T {
                let output = try await Bearer.$token.withValue(bearer) { try await body() }
                seen.ids.withLock { _ = $0.insert(id) }
                if Mirror(reflecting: output).children.first?.label == "undocumented" {
                    seen.undocumented.withLock { $0.append("\(id): \(output)") }
                }
                return output
            }
            let operatorToken = LiveServer.operatorToken
            let app = Request(action: "ai_suggestions", resource: Resource(type: "app"))

            // Operations of the server itself.
            _ = try await call("getHealthz") { try await api.getHealthz() }
            _ = try await call("getPlayground") { try await api.getPlayground() }
            _ = try await call("getReadyz") { try await api.getReadyz() }
            _ = try await call("getMetrics") { try await api.getMetrics() }
            _ = try await call("getPolicy") { try await api.getPolicy() }
            // The live server has no bundle key: the documented 404 problem.
            _ = try await call("getBundle") { try await api.getBundle() }
            _ = try await call("getBundleEvents") { try await api.getBundleEvents() }

            // Sessions.
            let anonymous = try await call("postAuthAnonymous") { try await api.postAuthAnonymous() }.created.body.json
            // A device name the server refuses: the documented 400 naming the header (found by schemathesis).
            let refused = try await call("postAuthAnonymous") { try await api.postAuthAnonymous(headers: .init(gatehouseDevice: String(repeating: "x", count: 65))) }
            #expect(Mirror(reflecting: refused).children.first?.label == "badRequest", "\(refused)")
            let refreshed = try await call("postAuthRefresh") {
                try await api.postAuthRefresh(body: .json(.init(refreshToken: anonymous.refreshToken)))
            }.ok.body.json
            let registered = try await call("postAuthPinRegister") {
                try await api.postAuthPinRegister(body: .json(.init(username: "agreement.user", pin: "604918")))
            }.created.body.json
            let signedIn = try await call("postAuthPinSignin") {
                try await api.postAuthPinSignin(body: .json(.init(username: "agreement.user", pin: "604918")))
            }.ok.body.json
            var token = signedIn.accessToken
            let verified = try await call("postAuthPinVerify", bearer: token) { try await api.postAuthPinVerify(body: .json(.init(pin: "604918"))) }
            token = try verified.ok.body.json.accessToken
            _ = try await call("postAuthPinChange", bearer: token) {
                try await api.postAuthPinChange(body: .json(.init(currentPin: "604918", newPin: "715029")))
            }
            let setPIN = try await call("putAuthPin", bearer: token) { try await api.putAuthPin(body: .json(.init(pin: "826130"))) }
            if case .ok(let ok) = setPIN { token = try ok.body.json.accessToken }

            // Decisions.
            let t = token
            _ = try await call("postDecide", bearer: t) { try await api.postDecide(body: .json(app)) }
            let item = try ContractParts.value(of: app)
            _ = try await call("postDecideBatch", bearer: t) { try await api.postDecideBatch(body: .json(.init(requests: [item]))) }
            _ = try await call("postExplain", bearer: t) { try await api.postExplain(body: .json(app)) }
            let parts = try ContractParts(resource: Resource(type: "app"), context: Context())
            _ = try await call("postCheck", bearer: t) {
                try await api.postCheck(body: .json(.init(resource: parts.resource, actions: ["ai_suggestions", "cloud_sync"], context: parts.context)))
            }

            // Sign in with Apple: a nonce, a sign-in, then a link of another Apple id to the PIN account, and its unlink.
            let nonce = try await call("postAuthAppleNonce") { try await api.postAuthAppleNonce() }.created.body.json.nonce
            let appleToken = try server.apple.identityToken(subject: "000111.agreement", nonceDigest: sha256Hex(nonce))
            let apple = try await call("postAuthApple") {
                try await api.postAuthApple(body: .json(.init(identityToken: appleToken, nonce: nonce, fullName: "Agreement Apple")))
            }.ok.body.json
            let linkNonce = try await api.postAuthAppleNonce().created.body.json.nonce
            let linkToken = try server.apple.identityToken(subject: "000222.agreement", nonceDigest: sha256Hex(linkNonce))
            _ = try await call("postAuthAppleLink", bearer: t) {
                try await api.postAuthAppleLink(body: .json(.init(identityToken: linkToken, nonce: linkNonce)))
            }
            _ = try await call("deleteAuthAppleLink", bearer: t) { try await api.deleteAuthAppleLink() }
            _ = try await call("postAuthAppleNotifications") { try await api.postAuthAppleNotifications(body: .json(.init(payload: "not-a-jws"))) }

            // Device keys.
            let key = SoftwareDeviceKey()
            _ = try await call("postAuthDeviceEnroll", bearer: t) {
                try await api.postAuthDeviceEnroll(body: .json(.init(deviceId: "agreement-phone", publicKey: key.publicKey.base64EncodedString())))
            }
            let challengeOutput = try await call("postAuthDeviceChallenge", bearer: t) {
                try await api.postAuthDeviceChallenge(body: .json(.init(deviceId: "agreement-phone")))
            }
            if case .created(let created) = challengeOutput {
                let challenge = try created.body.json.challenge
                let signature = try key.signature(for: Data(base64Encoded: challenge) ?? Data()).base64EncodedString()
                _ = try await call("postAuthDeviceVerify", bearer: t) {
                    try await api.postAuthDeviceVerify(body: .json(.init(deviceId: "agreement-phone", challenge: challenge, signature: signature)))
                }
            }

            // The user's own routes.
            _ = try await call("getMe", bearer: t) { try await api.getMe() }
            _ = try await call("putMeUsername", bearer: t) { try await api.putMeUsername(body: .json(.init(username: "agreement.renamed"))) }
            _ = try await call("getMePrivacy", bearer: t) { try await api.getMePrivacy() }
            _ = try await call("putMePrivacy", bearer: t) { try await api.putMePrivacy(body: .json(.init(analytics: true))) }
            _ = try await call("getMeExport", bearer: t) { try await api.getMeExport() }
            _ = try await call("postMePurchases", bearer: t) { try await api.postMePurchases(body: .json(.init(signedTransaction: "not-a-jws"))) }
            _ = try await call("postAppStoreNotifications") {
                try await api.postAppStoreNotifications(body: .json(.init(signedPayload: "not-a-jws")))
            }

            // Shared spaces.
            let space = try await call("postSpaces", bearer: t) { try await api.postSpaces(body: .json(.init(name: "Thesis", inviteRole: "editor"))) }
            if case .created(let created) = space {
                let id = try created.body.json.resourceId
                let code = try await call("postSpacesByIdCodes", bearer: t) {
                    try await api.postSpacesByIdCodes(path: .init(id: id), body: .json(.init(role: "viewer")))
                }
                let shareCode = try code.created.body.json.shareCode
                _ = try await call("postSpacesJoin", bearer: refreshed.accessToken) {
                    try await api.postSpacesJoin(body: .json(.init(shareCode: shareCode)))
                }
                _ = try await call("postOperatorResourcesByIdUsage", bearer: operatorToken) {
                    try await api.postOperatorResourcesByIdUsage(path: .init(id: id), body: .json(.init(counter: "sources", by: 3)))
                }
            }

            // Lists and plans.
            _ = try await call("postPlan", bearer: t) { try await api.postPlan(body: .json(.init(action: "edit", resourceType: "project"))) }
            _ = try await call("getResources", bearer: t) { try await api.getResources(query: .init(_type: "project", action: "view", limit: 10)) }

            // The operator's routes, on the registered user.
            let user = registered.userId
            _ = try await call("postOperatorAppleCredentialState", bearer: operatorToken) {
                try await api.postOperatorAppleCredentialState(body: .json(.init(appleUserId: "000111.agreement", state: .authorized)))
            }
            _ = try await call("putOperatorUsersByIdRoles", bearer: operatorToken) {
                try await api.putOperatorUsersByIdRoles(path: .init(id: user), body: .json(.init(roles: [])))
            }
            _ = try await call("putOperatorUsersByIdSubscription", bearer: operatorToken) {
                try await api.putOperatorUsersByIdSubscription(path: .init(id: user), body: .json(.init(productId: "com.researchapp.pro.monthly")))
            }
            _ = try await call("postOperatorUsersByIdLegacyPin", bearer: operatorToken) {
                try await api.postOperatorUsersByIdLegacyPin(path: .init(id: user), body: .json(.init(hexHash: String(repeating: "ab", count: 32))))
            }
            _ = try await call("postOperatorUsersByIdUsage", bearer: operatorToken) {
                try await api.postOperatorUsersByIdUsage(path: .init(id: user), body: .json(.init(counter: "sources")))
            }
            _ = try await call("postOperatorUsersByIdPinUnlock", bearer: operatorToken) { try await api.postOperatorUsersByIdPinUnlock(path: .init(id: user)) }
            _ = try await call("getOperatorDecisions", bearer: operatorToken) { try await api.getOperatorDecisions(query: .init(limit: 10)) }
            _ = try await call("getOperatorAudit", bearer: operatorToken) { try await api.getOperatorAudit(query: .init(user: user, limit: 10)) }
            _ = try await call("getOperatorShadow", bearer: operatorToken) { try await api.getOperatorShadow() }

            // The console's operator routes (issue 43); this server runs without --console, so its pages answer 404.
            _ = try await call("getOperatorUsers", bearer: operatorToken) { try await api.getOperatorUsers(query: .init(q: user)) }
            _ = try await call("getOperatorUsersById", bearer: operatorToken) { try await api.getOperatorUsersById(path: .init(id: user)) }
            _ = try await call("postOperatorUsersByIdExplain", bearer: operatorToken) {
                try await api.postOperatorUsersByIdExplain(path: .init(id: user), body: .json(app))
            }
            _ = try await call("postOperatorUsersByIdDecisionsByDecisionIdExplain", bearer: operatorToken) {
                try await api.postOperatorUsersByIdDecisionsByDecisionIdExplain(path: .init(id: user, decisionId: "1"))
            }
            _ = try await call("deleteOperatorUsersByIdSessionsBySessionId", bearer: operatorToken) {
                try await api.deleteOperatorUsersByIdSessionsBySessionId(path: .init(id: user, sessionId: "no-such-session"))
            }
            _ = try await call("deleteOperatorUsersByIdSubscription", bearer: operatorToken) {
                try await api.deleteOperatorUsersByIdSubscription(path: .init(id: user))
            }
            _ = try await call("getOperatorPolicy", bearer: operatorToken) { try await api.getOperatorPolicy() }
            _ = try await call("getConsole") { try await api.getConsole() }
            _ = try await call("getConsoleScript") { try await api.getConsoleScript() }
            _ = try await call("getConsoleStyle") { try await api.getConsoleStyle() }

            // Endings: this session, every session of the anonymous user, the account, then the operator's delete.
            _ = try await call("postAuthSignout", bearer: apple.accessToken) { try await api.postAuthSignout() }
            _ = try await call("postAuthSignoutEverywhere", bearer: refreshed.accessToken) { try await api.postAuthSignoutEverywhere() }
            _ = try await call("deleteMe", bearer: t) { try await api.deleteMe() }
            let other = try await api.postAuthAnonymous().created.body.json
            _ = try await call("postOperatorUsersByIdSignoutEverywhere", bearer: operatorToken) {
                try await api.postOperatorUsersByIdSignoutEverywhere(path: .init(id: other.userId))
            }
            _ = try await call("deleteOperatorUsersById", bearer: operatorToken) { try await api.deleteOperatorUsersById(path: .init(id: other.userId)) }

            // The detector sees an undocumented answer for what it is.
            let probe = Operations.GetHealthz.Output.undocumented(statusCode: 500, .init())
            #expect(Mirror(reflecting: probe).children.first?.label == "undocumented")
            let called = seen.ids.withLock { $0 }
            let spec = try GeneratedClientTests.specOperations()
            #expect(called == spec, "not called: \(spec.subtracting(called).sorted())")
            let undocumented = seen.undocumented.withLock { $0 }
            #expect(undocumented.isEmpty, "answers the spec does not document:\n\(undocumented.joined(separator: "\n"))")
        }
    }
}
