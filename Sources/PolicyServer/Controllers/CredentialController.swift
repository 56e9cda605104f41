import Foundation
import Gatehouse
import Hummingbird

/// The signed-in account's credentials: its PIN, its linked Apple id (and Apple's notifications about it), its
/// device keys. Each needs the bearer; the ones that check a secret are under the per-client limit.
struct CredentialController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    /// The bearer (401 without one), then the per-client limit, then the body: the order every credential route keeps.
    private func signedIn(_ request: Request, _ context: ServerContext, required: Set<String>, optional: Set<String> = []) async throws
        -> (bearer: String, body: IdentityBody)
    {
        let bearer = try requiredBearer(request)
        try await server.throttleSignIn(context)
        return (bearer, try await server.body(request, required: required, optional: optional))
    }

    /// A change to the signed-in account (`signedIn`); answers 204 once `change` is done with the bearer and body.
    private func signedInChange(
        _ request: Request, _ context: ServerContext, required: Set<String>, _ change: (String, IdentityBody) async throws -> Void
    ) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: required)
        try await change(bearer, body)
        return noContent()
    }

    @Sendable func setPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: ["pin"])
        return stepUpJSON(try await identity.setPIN(accessToken: bearer, pin: try body.string("pin")))
    }

    @Sendable func changePIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await signedInChange(request, context, required: ["currentPin", "newPin"]) { bearer, body in
            try await identity.changePIN(accessToken: bearer, currentPIN: try body.string("currentPin"), newPIN: try body.string("newPin"))
        }
    }

    @Sendable func verifyPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: ["pin"])
        let pin = try body.string("pin")
        return stepUpJSON(try await server.signIn(method: "pin_verify") { try await identity.verifyPIN(accessToken: bearer, pin: pin) })
    }

    @Sendable func linkApple(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: ["identityToken", "nonce"], optional: ["fullName"])
        return stepUpJSON(
            try await identity.linkApple(
                accessToken: bearer, identityToken: try body.string("identityToken"), rawNonce: try body.string("nonce"),
                fullName: try body.optionalString("fullName")))
    }

    @Sendable func unlinkApple(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await identity.unlinkApple(accessToken: try requiredBearer(request))
        return noContent()
    }

    /// Apple's server-to-server notification: `{"payload": "<JWS>"}`, verified against Apple's keys.
    @Sendable func appleNotification(_ request: Request, _ context: ServerContext) async throws -> Response {
        let body = try await server.body(request, required: ["payload"])
        let outcome: String =
            switch try await identity.handleAppleNotification(signedPayload: try body.string("payload")) {
            case .applied(let state): state.rawValue
            case .recorded: "recorded"
            case .stale: "stale"
            case .unknownSubject: "unknown_subject"
            }
        return json(.object([.init("outcome", .string(outcome))]))
    }

    @Sendable func enrollDevice(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await signedInChange(request, context, required: ["deviceId", "publicKey"]) { bearer, body in
            try await identity.enrollDeviceKey(accessToken: bearer, deviceId: try body.string("deviceId"), publicKey: try body.bytes("publicKey"))
        }
    }

    @Sendable func deviceChallenge(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: ["deviceId"])
        let challenge = try await identity.deviceChallenge(accessToken: bearer, deviceId: try body.string("deviceId"))
        return json(.object([.init("challenge", .string(challenge.base64EncodedString()))]), status: .created)
    }

    @Sendable func verifyDevice(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (bearer, body) = try await signedIn(request, context, required: ["deviceId", "challenge", "signature"])
        return stepUpJSON(
            try await identity.verifyDeviceSignature(
                accessToken: bearer, deviceId: try body.string("deviceId"), challenge: try body.bytes("challenge"),
                signature: try body.bytes("signature")))
    }
}
