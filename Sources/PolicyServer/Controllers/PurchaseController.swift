import Gatehouse
import Hummingbird
import PolicyModel
import PolicyServerAPI

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

/// The purchase (under the write quota, `GeneratedRoutes.writes`) and Apple's notifications, generated routes.
extension GeneratedRoutes {
    func postMePurchases(_ input: Operations.PostMePurchases.Input) async throws -> Operations.PostMePurchases.Output { .undocumented(statusCode: try await sent(PurchaseController(server: server).purchase), .init()) }
    func postAppStoreNotifications(_ input: Operations.PostAppStoreNotifications.Input) async throws -> Operations.PostAppStoreNotifications.Output { .undocumented(statusCode: try await sent(PurchaseController(server: server).notification), .init()) }
}
