import Gatehouse
import HTTPTypes
import Hummingbird

/// Signing in and out: anonymous, username and PIN, Sign in with Apple, refresh, sign-out. Every sign-in is under
/// the per-client limit and counted by method and outcome.
struct SessionController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    /// The header a client names its device in (docs/console.md): kept on the session for operators, never decided on.
    static let deviceHeader = HTTPField.Name("Gatehouse-Device")!

    /// What the sign-in says of its device: `Gatehouse-Device`, checked (`invalid_input` naming the header), and the
    /// User-Agent reduced to its product.
    static func device(_ request: Request) throws -> SessionDevice {
        try SessionDevice(name: request.headers[deviceHeader], userAgent: request.headers[.userAgent])
    }

    @Sendable func anonymous(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await server.throttleSignIn(context)
        let device = try Self.device(request)
        let tokens = try await server.signIn(method: "anonymous") { try await identity.signInAnonymously(source: server.source(context), device: device) }
        return json(GatehouseServer.tokens(tokens), status: .created)
    }

    @Sendable func refresh(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await server.throttleSignIn(context)
        let refresh = try await server.body(request, required: ["refreshToken"]).string("refreshToken")
        return json(GatehouseServer.tokens(try await server.signIn(method: "refresh") { try await identity.refresh(refreshToken: refresh) }))
    }

    @Sendable func signOut(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await identity.signOut(accessToken: try requiredBearer(request))
        return noContent()
    }

    @Sendable func signOutEverywhere(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await identity.signOutEverywhere(accessToken: try requiredBearer(request))
        return noContent()
    }

    @Sendable func registerPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await pinSignIn(request, context, status: .created, identity.register(username:pin:source:device:))
    }

    @Sendable func signInPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await pinSignIn(request, context, status: .ok, identity.signIn(username:pin:source:device:))
    }

    /// `{"username", "pin"}` to a token pair by `flow` (register or sign in), counted as a `pin` sign-in.
    private func pinSignIn(
        _ request: Request, _ context: ServerContext, status: HTTPResponse.Status,
        _ flow: @escaping @Sendable (String, String, ClientSource, SessionDevice?) async throws -> SessionTokens
    ) async throws -> Response {
        try await server.throttleSignIn(context)
        let body = try await server.body(request, required: ["username", "pin"])
        let (username, pin) = (try body.string("username"), try body.string("pin"))
        let device = try Self.device(request)
        let tokens = try await server.signIn(method: "pin") { try await flow(username, pin, server.source(context), device) }
        return json(GatehouseServer.tokens(tokens), status: status)
    }

    @Sendable func appleNonce(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await server.throttleSignIn(context)
        return json(.object([.init("nonce", .string(try await identity.beginAppleSignIn()))]), status: .created)
    }

    @Sendable func signInApple(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await server.throttleSignIn(context)
        let body = try await server.body(request, required: ["identityToken", "nonce"], optional: ["fullName"])
        let (token, nonce, name) = (try body.string("identityToken"), try body.string("nonce"), try body.optionalString("fullName"))
        let device = try Self.device(request)
        let tokens = try await server.signIn(method: "apple") {
            try await identity.signInWithApple(identityToken: token, rawNonce: nonce, fullName: name, device: device)
        }
        return json(GatehouseServer.tokens(tokens))
    }
}
