import Foundation
import Gatehouse
import Hummingbird

/// The write quotas of the routes that add rows (spaces, share codes, privacy, username, export, purchases, account
/// deletion): a token bucket per client address and one per account, so neither one anonymous client with many
/// accounts nor one account from many addresses can grow the database without end. Past either, 429 with
/// `Retry-After`.
public final class WriteQuota: Sendable {
    public let perAccount: RateLimiter
    public let perSource: RateLimiter

    public init(account: RateLimit, source: RateLimit, now: @escaping @Sendable () -> Date = { Date() }) {
        perAccount = RateLimiter(limit: account, now: now)
        perSource = RateLimiter(limit: source, now: now)
    }

    /// Takes one decision record of client `source` and of user `account` (nil: signed out, the client's bucket only):
    /// false when either bucket is empty, and the record is dropped.
    func admitsRecord(source: String?, account: String?) -> Bool {
        if perSource.take(source ?? "in-process") != nil { return false }
        if let account, perAccount.take(account) != nil { return false }
        return true
    }

    /// Takes one write of `source` and of the holder of `accessToken` (its session read from the store: the account,
    /// not the token, is what is limited); throws 401 for a token that is not live, 429 past a quota.
    func take(accessToken: String, source: String, identity: IdentityService) async throws {
        if let wait = perSource.take(source) {
            throw Problem.throttled(retryAfter: wait, detail: "too many writes from this client")
        }
        let session = try await identity.validate(accessToken: accessToken)
        if let wait = perAccount.take(session.userId) {
            throw Problem.throttled(retryAfter: wait, detail: "too many writes from this account")
        }
    }
}

extension RouteBuilder {
    /// A route that writes rows for the bearer's account: the bearer is required and the write quotas
    /// (`WriteQuota`) are taken before `handler` runs. Registering a route with `write` instead of `on` is all a
    /// route needs to be under the quotas.
    func write(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Hummingbird.Request, ServerContext) async throws -> Response
    ) {
        let server = self.server
        on(method, path) { request, context in
            do {
                try await server.writeQuota.take(
                    accessToken: try requiredBearer(request), source: server.clientKey(context), identity: server.service.identity)
            } catch let problem as Problem where problem.status == 429 {
                server.metrics.throttled()
                throw problem
            }
            return try await handler(request, context)
        }
    }
}
