import Gatehouse
import Hummingbird
import PolicyModel

/// App Store purchases: a signed transaction the app sends, and Apple's server notifications. The tiers products
/// grant are the serving policy's.
struct PurchaseController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    /// A StoreKit 2 signed transaction (`jwsRepresentation`); a product id the client names proves nothing.
    @Sendable func purchase(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let body = try await server.body(request, required: ["signedTransaction"])
        let result = try await identity.recordPurchase(
            accessToken: bearer, signedTransaction: try body.string("signedTransaction"), productTiers: server.service.policy.productTiers)
        return json(
            .object([
                .init("outcome", .string(result.outcome.rawValue)), .init("tier", result.tier.map { .string($0) } ?? .null),
                .init("expiresAt", result.expiresAt.map { .string(Timestamp.format($0)) } ?? .null),
            ]))
    }

    /// App Store Server Notifications V2: no bearer; the signed payload is verified like a purchase, after the
    /// route's per-client limit (`--notification-limit`).
    @Sendable func notification(_ request: Request, _ context: ServerContext) async throws -> Response {
        if let wait = server.notificationLimiter.take(server.clientKey(context)) {
            server.metrics.throttled()
            throw Problem.throttled(retryAfter: wait)
        }
        let body = try await server.body(request, required: ["signedPayload"])
        let outcome = try await identity.handleAppStoreNotification(
            signedPayload: try body.string("signedPayload"), productTiers: server.service.policy.productTiers)
        return json(.object([.init("outcome", .string(outcome.rawValue))]))
    }
}
