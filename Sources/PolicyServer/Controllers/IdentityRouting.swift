import Foundation
import Gatehouse
import Hummingbird

/// What the identity controllers share: the per-client sign-in limit, the client as the identity layer knows it,
/// the typed body, the operator credential, and the answers they all give.
extension GatehouseServer {
    /// The per-client limit of the sign-in, PIN and device routes: this replica's bucket first (a flood costs
    /// no database write), then the window every replica shares through the store, so N replicas allow the
    /// limit once, not N times.
    func throttleSignIn(_ context: ServerContext) async throws {
        let limit = settings.signInLimit
        if let wait = signInLimiter.take(clientKey(context)) {
            metrics.throttled()
            throw Problem.throttled(retryAfter: wait)
        }
        if let wait = try await service.identity.admitSignIn(source: source(context), limit: limit.requests, window: limit.window) {
            metrics.throttled()
            throw Problem.throttled(retryAfter: wait)
        }
    }

    /// The client as the identity layer's per-source limits know it (it keeps only a digest).
    func source(_ context: ServerContext) -> ClientSource { ClientSource(clientKey(context)) }

    /// The request's JSON object, with its `required` fields and no field outside `required` and `optional`.
    func body(_ request: Request, required: Set<String> = [], optional: Set<String> = []) async throws -> IdentityBody {
        try IdentityBody(try await readBody(request, limit: settings.bodyLimit), required: required, optional: optional)
    }

    /// The operator credential of the request, refused (401) unless it matches the configured one; the
    /// identity layer checks it again on the flows that take it.
    ///
    /// Failed attempts count per client (the sign-in limit): once a client has spent them, every attempt, the right
    /// credential too, is 429 until the window refills, so the credential cannot be guessed at request rate.
    func requireOperator(_ request: Request, _ context: ServerContext) throws -> OperatorCredential {
        let client = clientKey(context)
        if let wait = operatorLimiter.wait(client) {
            metrics.throttled()
            throw Problem.throttled(retryAfter: wait, detail: "too many failed operator credentials from this client")
        }
        guard let stored = settings.operatorTokenDigest, let presented = try? bearerToken(request), OperatorToken.matches(presented, stored: stored)
        else {
            _ = operatorLimiter.take(client)
            throw Problem.operatorOnly
        }
        return OperatorCredential(token: presented)
    }
}

/// `204 No Content`: a write that answers nothing.
func noContent() -> Response { Response(status: .noContent) }

/// A step-up's answer: the access token (rotated or the same), whether it rotated, and the method verified.
func stepUpJSON(_ s: StepUp) -> Response {
    json(.object([.init("accessToken", .string(s.accessToken)), .init("rotated", .bool(s.rotated)), .init("method", .string(s.method))]))
}
