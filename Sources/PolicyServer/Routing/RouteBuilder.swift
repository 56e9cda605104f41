import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Identity
import Logging
import NIOCore
import NIOHTTP1
import PolicyEngine
import PolicyModel
import ServiceLifecycle
import Synchronization

/// The request context of every route: Hummingbird's core storage and the peer address (for rate limits).
public struct ServerContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The client a trusted load balancer forwarded for (`ForwardedClientMiddleware`), nil otherwise.
    public var forwardedClient: String?
    /// The request's connection: a bundle event stream closes it to drop a client that stopped reading.
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}

extension HTTPField.Name {
    /// The content hash of the policy version that made the decisions in a response.
    public static let gatehousePolicy = HTTPField.Name("Gatehouse-Policy")!
}

/// Every route the server registers, as (method, path): what `docs/openapi.yaml` must list.
public struct RouteTable: Sendable {
    public internal(set) var routes: [(method: String, path: String)] = []
}

/// Which methods each registered path answers, for `405 Method Not Allowed` with `Allow`.
final class AllowedMethods: Sendable {
    private let routes = Mutex<[(method: String, segments: [Substring])]>([])

    func add(_ method: String, _ path: String) {
        routes.withLock { $0.append((method, path.split(separator: "/"))) }
    }

    /// The methods registered for a concrete path (`{id}` matches any one segment); empty when none.
    func methods(for path: String) -> [String] {
        let parts = path.split(separator: "/")
        return routes.withLock { all in
            all.filter { route in
                route.segments.count == parts.count
                    && zip(route.segments, parts).allSatisfy { pattern, part in pattern.hasPrefix("{") || pattern == part }
            }.map(\.method)
        }
    }
}

/// Adds routes to a router and keeps the table of what it added.
final class RouteBuilder {
    let router: Router<ServerContext>
    let server: GatehouseServer
    let allowed: AllowedMethods
    var table = RouteTable()
    /// Every route's request deadline, kept by one sweeping task (not a sleeping task per request).
    let deadlines = RequestDeadlines()

    init(router: Router<ServerContext>, server: GatehouseServer, allowed: AllowedMethods) {
        self.router = router
        self.server = server
        self.allowed = allowed
    }

    func on(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Hummingbird.Request, ServerContext) async throws -> Response
    ) {
        let limit = server.settings.requestTimeout
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        let metrics = server.metrics
        let deadlines = deadlines
        // The request deadline: past it the answer is 503 `storage_unavailable` with Retry-After, whatever
        // the handler waits on (the store's own deadlines end most waits first); the handler is cancelled.
        router.on(RouterPath(path), method: method) { request, context in
            let outcome = await withinRequestDeadline(limit, timers: deadlines) { () -> Result<Response, any Error> in
                do { return .success(try await handler(request, context)) } catch { return .failure(error) }
            }
            guard let outcome else {
                metrics.requestDeadlineMissed()
                throw Problem.requestDeadline(seconds: seconds)
            }
            return try outcome.get()
        }
        table.routes.append((method.rawValue, path))
        allowed.add(method.rawValue, path)
    }

    /// A decision route: the body's bytes (413 past the limit), the bearer, the policy version serving now (one
    /// version for the whole body), and the route's latency metric around `answer`.
    func decision(
        _ path: String, metric: String,
        _ answer: @escaping @Sendable (ByteBuffer, String?, CompiledPolicy, DecisionOrigin?) async throws -> Response
    ) {
        let latency = server.metrics.decisionLatency(metric)
        let (server, service, limit) = (server, server.service, server.settings.bodyLimit)
        on(.post, path) { request, context in
            let start = DispatchTime.now().uptimeNanoseconds
            let body = try await readBytes(request, limit: limit)
            let response = try await answer(body, try bearerToken(request), service.policy, server.decisionOrigin(context))
            latency.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds - start))
            return response
        }
    }
}

/// Builds the router over a server; tests call it with HummingbirdTesting, `buildApplication` serves it.
public func buildRouter(_ server: GatehouseServer) -> Router<ServerContext> {
    buildRouterAndTable(server).router
}

/// The router and the table of what it registered.
public func buildRouterAndTable(_ server: GatehouseServer) -> (router: Router<ServerContext>, table: RouteTable) {
    let router = Router(context: ServerContext.self)
    let allowed = AllowedMethods()
    // First, so the request's span holds everything else (and the problem answers can name its trace).
    if DecisionTracing.isEnabled { router.add(middleware: RequestTracingMiddleware()) }
    if !server.settings.trustedProxies.isEmpty {
        router.add(middleware: ForwardedClientMiddleware(trusted: server.settings.trustedProxies))
    }
    // The problem mapper, which also refuses a request of the wrong shape (`RequestShapeMiddleware.refusal`) first.
    router.add(middleware: ProblemMiddleware(server: server, allowed: allowed))
    let builder = RouteBuilder(router: router, server: server, allowed: allowed)
    addRoutes(to: builder)
    return (router, builder.table)
}
