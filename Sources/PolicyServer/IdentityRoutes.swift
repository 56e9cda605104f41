import Foundation
import Gatehouse
import Hummingbird
import NIOCore
import PolicyModel

/// The identity routes: sign-in, verification, sessions, spaces, privacy, data rights, purchases, and the
/// operator routes. Every one is a call into `IdentityService`; the routes read bodies and shape answers.
func addIdentityRoutes(_ routes: RouteBuilder) {
    let server = routes.server
    let route = routes.on
    /// A route that adds rows for the bearer's account: under the write quotas (`WriteQuota`).
    let write = routes.write
    let limit = server.settings.bodyLimit
    let identity = server.service.identity

    /// The per-client limit of the sign-in, PIN and device routes: this replica's bucket first (a flood costs
    /// no database write), then the window every replica shares through the store, so N replicas allow the
    /// limit once, not N times.
    @Sendable func throttle(_ context: ServerContext) async throws {
        let limit = server.settings.signInLimit
        if let wait = server.signInLimiter.take(server.clientKey(context)) {
            server.metrics.throttled()
            throw Problem.throttled(retryAfter: wait)
        }
        if let wait = try await identity.admitSignIn(source: source(context), limit: limit.requests, window: limit.window) {
            server.metrics.throttled()
            throw Problem.throttled(retryAfter: wait)
        }
    }
    /// The client as the identity layer's per-source limits know it (it keeps only a digest).
    @Sendable func source(_ context: ServerContext) -> ClientSource { ClientSource(server.clientKey(context)) }
    @Sendable func fields(_ request: Hummingbird.Request, required: Set<String> = [], optional: Set<String> = []) async throws -> IdentityBody {
        try IdentityBody(try await readBody(request, limit: limit), required: required, optional: optional)
    }
    @Sendable func stepUp(_ s: StepUp) -> Response {
        json(.object([.init("accessToken", .string(s.accessToken)), .init("rotated", .bool(s.rotated)), .init("method", .string(s.method))]))
    }

    // MARK: sessions
    route(.post, "/v1/auth/anonymous") { _, context in
        try await throttle(context)
        let tokens = try await server.signIn(method: "anonymous") { try await identity.signInAnonymously(source: source(context)) }
        return json(GatehouseServer.tokens(tokens), status: .created)
    }
    route(.post, "/v1/auth/refresh") { request, context in
        try await throttle(context)
        let body = try await fields(request, required: ["refreshToken"])
        let refresh = try body.string("refreshToken")
        let tokens = try await server.signIn(method: "refresh") { try await identity.refresh(refreshToken: refresh) }
        return json(GatehouseServer.tokens(tokens))
    }
    route(.post, "/v1/auth/signout") { request, _ in
        try await identity.signOut(accessToken: try requiredBearer(request))
        return Response(status: .noContent)
    }
    route(.post, "/v1/auth/signout-everywhere") { request, _ in
        try await identity.signOutEverywhere(accessToken: try requiredBearer(request))
        return Response(status: .noContent)
    }

    // MARK: username + PIN
    route(.post, "/v1/auth/pin/register") { request, context in
        try await throttle(context)
        let body = try await fields(request, required: ["username", "pin"])
        let (username, pin) = (try body.string("username"), try body.string("pin"))
        let tokens = try await server.signIn(method: "pin") { try await identity.register(username: username, pin: pin, source: source(context)) }
        return json(GatehouseServer.tokens(tokens), status: .created)
    }
    route(.post, "/v1/auth/pin/signin") { request, context in
        try await throttle(context)
        let body = try await fields(request, required: ["username", "pin"])
        let (username, pin) = (try body.string("username"), try body.string("pin"))
        let tokens = try await server.signIn(method: "pin") { try await identity.signIn(username: username, pin: pin, source: source(context)) }
        return json(GatehouseServer.tokens(tokens))
    }
    route(.put, "/v1/auth/pin") { request, context in
        let token = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["pin"])
        return stepUp(try await identity.setPIN(accessToken: token, pin: try body.string("pin")))
    }
    route(.post, "/v1/auth/pin/change") { request, context in
        let token = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["currentPin", "newPin"])
        try await identity.changePIN(accessToken: token, currentPIN: try body.string("currentPin"), newPIN: try body.string("newPin"))
        return Response(status: .noContent)
    }
    route(.post, "/v1/auth/pin/verify") { request, context in
        let token = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["pin"])
        do {
            let result = try await identity.verifyPIN(accessToken: token, pin: try body.string("pin"))
            server.metrics.signIn(method: "pin_verify", outcome: "success")
            return stepUp(result)
        } catch let error as IdentityError {
            server.metrics.signIn(method: "pin_verify", outcome: error.code.rawValue)
            throw error
        }
    }

    // MARK: Sign in with Apple
    route(.post, "/v1/auth/apple/nonce") { _, context in
        try await throttle(context)
        return json(.object([.init("nonce", .string(try await identity.beginAppleSignIn()))]), status: .created)
    }
    route(.post, "/v1/auth/apple") { request, context in
        try await throttle(context)
        let body = try await fields(request, required: ["identityToken", "nonce"], optional: ["fullName"])
        let (token, nonce, name) = (try body.string("identityToken"), try body.string("nonce"), try body.optionalString("fullName"))
        let tokens = try await server.signIn(method: "apple") {
            try await identity.signInWithApple(identityToken: token, rawNonce: nonce, fullName: name)
        }
        return json(GatehouseServer.tokens(tokens))
    }
    route(.post, "/v1/auth/apple/link") { request, context in
        let bearer = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["identityToken", "nonce"], optional: ["fullName"])
        return stepUp(
            try await identity.linkApple(
                accessToken: bearer, identityToken: try body.string("identityToken"), rawNonce: try body.string("nonce"),
                fullName: try body.optionalString("fullName")))
    }

    write(.delete, "/v1/auth/apple/link") { request, _ in
        try await identity.unlinkApple(accessToken: try requiredBearer(request))
        return Response(status: .noContent)
    }
    route(.post, "/v1/auth/apple/notifications") { request, _ in
        // Apple's server-to-server notification: `{"payload": "<JWS>"}`, verified against Apple's keys.
        let body = try await fields(request, required: ["payload"])
        let outcome = try await identity.handleAppleNotification(signedPayload: try body.string("payload"))
        let text: String
        switch outcome {
        case .applied(let state): text = state.rawValue
        case .recorded: text = "recorded"
        case .stale: text = "stale"
        case .unknownSubject: text = "unknown_subject"
        }
        return json(.object([.init("outcome", .string(text))]))
    }

    // MARK: device keys
    route(.post, "/v1/auth/device/enroll") { request, context in
        let bearer = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["deviceId", "publicKey"])
        try await identity.enrollDeviceKey(accessToken: bearer, deviceId: try body.string("deviceId"), publicKey: try body.bytes("publicKey"))
        return Response(status: .noContent)
    }
    route(.post, "/v1/auth/device/challenge") { request, context in
        let bearer = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["deviceId"])
        let challenge = try await identity.deviceChallenge(accessToken: bearer, deviceId: try body.string("deviceId"))
        return json(.object([.init("challenge", .string(challenge.base64EncodedString()))]), status: .created)
    }
    route(.post, "/v1/auth/device/verify") { request, context in
        let bearer = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["deviceId", "challenge", "signature"])
        return stepUp(
            try await identity.verifyDeviceSignature(
                accessToken: bearer, deviceId: try body.string("deviceId"), challenge: try body.bytes("challenge"),
                signature: try body.bytes("signature")))
    }

    // MARK: the signed-in user
    write(.put, "/v1/me/username") { request, context in
        let bearer = try requiredBearer(request)
        let body = try await fields(request, required: ["username"])
        try await identity.setUsername(accessToken: bearer, username: try body.string("username"), source: source(context))
        return Response(status: .noContent)
    }
    route(.get, "/v1/me") { request, _ in
        json(profileJSON(try await identity.profile(accessToken: try requiredBearer(request))))
    }
    route(.get, "/v1/me/privacy") { request, _ in
        json(privacyJSON(try await identity.privacySettings(accessToken: try requiredBearer(request))))
    }
    write(.put, "/v1/me/privacy") { request, _ in
        let bearer = try requiredBearer(request)
        let body = try await fields(request, optional: ["analytics", "crashReporting", "aiSuggestions", "dataSharing"])
        var settings = try await identity.privacySettings(accessToken: bearer)
        if let v = try body.optionalBool("analytics") { settings.analytics = v }
        if let v = try body.optionalBool("crashReporting") { settings.crashReporting = v }
        if let v = try body.optionalBool("aiSuggestions") { settings.aiSuggestions = v }
        if let v = try body.optionalString("dataSharing") {
            guard let sharing = DataSharing(rawValue: v) else {
                throw RequestError(field: "dataSharing", "must be one of \(DataSharing.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.dataSharing = sharing
        }
        try await identity.setPrivacySettings(accessToken: bearer, settings)
        return json(privacyJSON(settings))
    }
    write(.get, "/v1/me/export") { request, _ in
        let data = try await identity.exportData(accessToken: try requiredBearer(request))
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
    write(.delete, "/v1/me") { request, _ in
        try await identity.deleteAccount(accessToken: try requiredBearer(request))
        return Response(status: .noContent)
    }
    write(.post, "/v1/me/purchases") { request, _ in
        // A StoreKit 2 signed transaction (`jwsRepresentation`); a product id the client names proves nothing.
        let bearer = try requiredBearer(request)
        let body = try await fields(request, required: ["signedTransaction"])
        let result = try await identity.recordPurchase(
            accessToken: bearer, signedTransaction: try body.string("signedTransaction"), productTiers: server.service.policy.productTiers)
        return json(
            .object([
                .init("outcome", .string(result.outcome.rawValue)), .init("tier", result.tier.map { .string($0) } ?? .null),
                .init("expiresAt", result.expiresAt.map { .string(Timestamp.format($0)) } ?? .null),
            ]))
    }
    route(.post, "/v1/app-store/notifications") { request, _ in
        // App Store Server Notifications V2: no bearer; the signed payload is verified like a purchase.
        let body = try await fields(request, required: ["signedPayload"])
        let outcome = try await identity.handleAppStoreNotification(
            signedPayload: try body.string("signedPayload"), productTiers: server.service.policy.productTiers)
        return json(.object([.init("outcome", .string(outcome.rawValue))]))
    }

    // MARK: shared spaces
    write(.post, "/v1/spaces") { request, _ in
        let bearer = try requiredBearer(request)
        let body = try await fields(request, required: ["name"], optional: ["type", "inviteRole"])
        let space = try await server.service.createSpace(
            accessToken: bearer, name: try body.string("name"), type: try body.optionalString("type"),
            inviteRole: try body.optionalString("inviteRole") ?? "editor")
        return json(.object([.init("resourceId", .string(space.resourceId)), .init("shareCode", .string(space.shareCode))]), status: .created)
    }
    write(.post, "/v1/spaces/{id}/codes") { request, context in
        let bearer = try requiredBearer(request)
        let body = try await fields(request, optional: ["role"])
        let id = try context.parameters.require("id")
        let code = try await identity.newShareCode(accessToken: bearer, resourceId: id, role: try body.optionalString("role") ?? "editor")
        return json(.object([.init("shareCode", .string(code))]), status: .created)
    }
    write(.post, "/v1/spaces/join") { request, context in
        let bearer = try requiredBearer(request)
        try await throttle(context)
        let body = try await fields(request, required: ["shareCode"])
        let id = try await identity.joinSpace(accessToken: bearer, shareCode: try body.string("shareCode"), source: source(context))
        return json(.object([.init("resourceId", .string(id))]))
    }

    // MARK: operator
    /// The operator credential of the request, refused (401) unless it matches the configured one; the
    /// identity layer checks it again on the flows that take it.
    ///
    /// Failed attempts count per client (the sign-in limit): once a client has spent them, every attempt, the right
    /// credential too, is 429 until the window refills, so the credential cannot be guessed at request rate.
    @Sendable func requireOperator(_ request: Hummingbird.Request, _ context: ServerContext) throws -> OperatorCredential {
        let client = server.clientKey(context)
        if let wait = server.operatorLimiter.wait(client) {
            server.metrics.throttled()
            throw Problem.throttled(retryAfter: wait, detail: "too many failed operator credentials from this client")
        }
        guard let stored = server.settings.operatorTokenDigest, let presented = try? bearerToken(request),
            OperatorToken.matches(presented, stored: stored)
        else {
            _ = server.operatorLimiter.take(client)
            throw Problem.operatorOnly
        }
        return OperatorCredential(token: presented)
    }
    route(.post, "/v1/operator/apple-credential-state") { request, context in
        let credential = try requireOperator(request, context)
        let body = try await fields(request, required: ["appleUserId", "state"], optional: ["transferredTo"])
        guard let state = AppleCredentialState(rawValue: try body.string("state")) else {
            throw RequestError(field: "state", "must be one of \(AppleCredentialState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        try await identity.updateAppleCredentialState(
            appleUserId: try body.string("appleUserId"), state: state, transferredTo: try body.optionalString("transferredTo"),
            operator: credential)
        return Response(status: .noContent)
    }
    route(.put, "/v1/operator/users/{id}/roles") { request, context in
        _ = try requireOperator(request, context)
        let body = try await fields(request, required: ["roles"])
        try await identity.setAppRoles(userId: try context.parameters.require("id"), roles: try body.strings("roles"))
        return Response(status: .noContent)
    }
    route(.put, "/v1/operator/users/{id}/subscription") { request, context in
        _ = try requireOperator(request, context)
        let body = try await fields(request, required: ["productId"], optional: ["expiresAt"])
        try await identity.recordSubscription(
            userId: try context.parameters.require("id"), productId: try body.string("productId"), expiresAt: try body.optionalDate("expiresAt"),
            productTiers: server.service.policy.productTiers)
        return Response(status: .noContent)
    }
    route(.post, "/v1/operator/users/{id}/legacy-pin") { request, context in
        _ = try requireOperator(request, context)
        let body = try await fields(request, required: ["hexHash"])
        try await identity.importLegacyPINHash(userId: try context.parameters.require("id"), hexHash: try body.string("hexHash"))
        return Response(status: .noContent)
    }
    route(.post, "/v1/operator/users/{id}/usage") { request, context in
        _ = try requireOperator(request, context)
        let (counter, delta) = try usageChange(try await fields(request, required: ["counter"], optional: ["by"]))
        let value = try await identity.incrementUserUsage(userId: try context.parameters.require("id"), counter: counter, by: delta)
        return json(.object([.init("counter", .string(counter)), .init("value", .int(value))]))
    }
    route(.post, "/v1/operator/resources/{id}/usage") { request, context in
        _ = try requireOperator(request, context)
        let (counter, delta) = try usageChange(try await fields(request, required: ["counter"], optional: ["by"]))
        let value = try await identity.incrementUsage(resourceId: try context.parameters.require("id"), counter: counter, by: delta)
        return json(.object([.init("counter", .string(counter)), .init("value", .int(value))]))
    }
    route(.post, "/v1/operator/users/{id}/pin-unlock") { request, context in
        let credential = try requireOperator(request, context)
        try await identity.unlockPIN(userId: try context.parameters.require("id"), operator: credential)
        return Response(status: .noContent)
    }
    route(.delete, "/v1/operator/users/{id}") { request, context in
        let credential = try requireOperator(request, context)
        try await identity.deleteUser(userId: try context.parameters.require("id"), operator: credential)
        return Response(status: .noContent)
    }
}

/// `{"counter", "by"}` of the usage routes; `by` defaults to 1 and may be negative (a source removed).
func usageChange(_ body: IdentityBody) throws(RequestError) -> (String, Int) {
    let counter = try body.string("counter")
    switch body.values["by"] {
    case nil: return (counter, 1)
    case .int(let by)?: return (counter, by)
    default: throw RequestError(field: "by", "must be an integer")
    }
}

func privacyJSON(_ p: PrivacySettings) -> JSONText {
    .object([
        .init("analytics", .bool(p.analytics)), .init("crashReporting", .bool(p.crashReporting)),
        .init("aiSuggestions", .bool(p.aiSuggestions)), .init("dataSharing", .string(p.dataSharing.rawValue)),
    ])
}

/// `GET /v1/me`: the account as its owner sees it; absent facts are `null`, never left out.
func profileJSON(_ p: AccountProfile) -> JSONText {
    func optional(_ text: String?) -> JSONText { text.map { .string($0) } ?? .null }
    return .object([
        .init("userId", .string(p.userId)), .init("username", optional(p.username)), .init("displayName", optional(p.displayName)),
        .init("email", optional(p.email)), .init("isPrivateRelayEmail", .bool(p.isPrivateRelayEmail)),
        .init("appleUserIds", .array(p.appleUserIds.map { .string($0) })), .init("hasPIN", .bool(p.hasPIN)),
        .init("deviceIds", .array(p.deviceIds.map { .string($0) })), .init("appRoles", .array(p.appRoles.map { .string($0) })),
        .init("tier", optional(p.tier)), .init("subscriptionExpiresAt", optional(p.subscriptionExpiresAt.map(Timestamp.format))),
        .init("appAccountToken", .string(p.appAccountToken)),
    ])
}
