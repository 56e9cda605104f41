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

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
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
        // The request deadline: past it the answer is 503 `storage_unavailable` with Retry-After, whatever
        // the handler waits on (the store's own deadlines end most waits first); the handler is cancelled.
        router.on(RouterPath(path), method: method) { request, context in
            let outcome = await withinDeadline(limit) { () -> Result<Response, any Error> in
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
}

/// Builds the router over a server; tests call it with HummingbirdTesting, `buildApplication` serves it.
public func buildRouter(_ server: GatehouseServer) -> Router<ServerContext> {
    buildRouterAndTable(server).router
}

/// The router and the table of what it registered.
public func buildRouterAndTable(_ server: GatehouseServer) -> (router: Router<ServerContext>, table: RouteTable) {
    let router = Router(context: ServerContext.self)
    let allowed = AllowedMethods()
    if !server.settings.trustedProxies.isEmpty {
        router.add(middleware: ForwardedClientMiddleware(trusted: server.settings.trustedProxies))
    }
    router.add(middleware: ProblemMiddleware(server: server, allowed: allowed))
    router.add(middleware: RequestShapeMiddleware())
    let builder = RouteBuilder(router: router, server: server, allowed: allowed)
    addOperationRoutes(builder)
    addDecisionRoutes(builder)
    addIdentityRoutes(builder)
    return (router, builder.table)
}

func addOperationRoutes(_ routes: RouteBuilder) {
    let server = routes.server
    let route = routes.on
    // MARK: operations
    route(.get, "/healthz") { _, _ in text("ok\n") }
    route(.get, "/playground") { _, _ in html(server.playgroundPage()) }
    route(.get, "/readyz") { _, _ in
        switch await server.databaseState() {
        case .ready: text("ready\n")
        case .readOnly:
            problemResponse(Problem(status: 503, code: "not_ready", title: "Not ready", detail: "the database answers reads but refuses writes"))
        case .unavailable:
            problemResponse(
                Problem(status: 503, code: "not_ready", title: "Not ready", detail: "the database does not answer, or a table requests use is missing"))
        }
    }
    route(.get, "/metrics") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: server.metrics.exposition(security: server.service.identity.counters.snapshot))))
    }
    route(.get, "/v1/policy") { _, _ in json(server.policyStatus()) }
}

func addDecisionRoutes(_ routes: RouteBuilder) {
    let server = routes.server
    let limit = server.settings.bodyLimit
    /// A decision route: the body's bytes (413 past the limit), the bearer, the policy version serving now (one
    /// version for the whole body), and the route's latency metric around `answer`.
    func decisionRoute(
        _ path: String, metric: String,
        _ answer: @escaping @Sendable (ByteBuffer, String?, CompiledPolicy) async throws -> Response
    ) {
        let latency = server.metrics.decisionLatency(metric)
        routes.on(.post, path) { request, _ in
            let start = DispatchTime.now().uptimeNanoseconds
            let body = try await readBytes(request, limit: limit)
            let response = try await answer(body, try bearerToken(request), server.service.policy)
            latency.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds - start))
            return response
        }
    }
    let headers = DecisionHeaders()
    decisionRoute("/v1/decide", metric: "decide") { body, bearer, policy in
        let request = try DecisionBodies.request(body.readableBytesView, limit: limit)
        let decision: Decision
        if let made = server.decideInMemory(request, bearer: bearer, by: policy) {
            decision = made  // no bearer, no decision log: nothing from the store, no await on the way
        } else {
            decision = try await server.decide(request, bearer: bearer, by: policy)
        }
        return jsonBytes(decision.jsonBytes, headers.fields(for: policy))
    }
    decisionRoute("/v1/decide/batch", metric: "batch") { body, bearer, policy in
        let answers = try await server.decideBatch(try DecisionBodies.batch(body.readableBytesView, limit: limit), bearer: bearer, by: policy)
        return jsonBytes(DecisionBodies.batchAnswer(answers), headers.fields(for: policy))
    }
    decisionRoute("/v1/explain", metric: "explain") { body, bearer, policy in
        let explanation = try await server.explain(try DecisionBodies.request(body.readableBytesView, limit: limit), bearer: bearer, by: policy)
        return json(explanation.json, policy: policy.contentHash)
    }
    decisionRoute("/v1/check", metric: "check") { body, bearer, policy in
        let answers = try await server.check(try DecisionBodies.check(body.readableBytesView, limit: limit), bearer: bearer, by: policy)
        return jsonBytes(DecisionBodies.checkAnswer(answers), headers.fields(for: policy))
    }
}

/// Builds the application: the router on `settings.host:port` with read/idle timeouts, the policy watcher
/// as a service, graceful shutdown on SIGTERM/SIGINT. `onListening` gets the numeric address and real port.
public func buildApplication(
    _ server: GatehouseServer, watch: Bool = true, reloadOnHangup: Bool = false,
    onListening: @escaping @Sendable (String, Int) async -> Void = { _, _ in }
) -> some ApplicationProtocol {
    let settings = server.settings
    var services: [any Service] = [
        MaintenanceService(
            identity: server.service.identity, interval: settings.maintenanceInterval, retentionDays: settings.retentionDays,
            metrics: server.metrics, logger: server.logger)
    ]
    if watch {
        services.append(
            PolicyWatcher(reloader: server.reloader, interval: settings.watchInterval, settle: settings.settleTime, reloadOnHangup: reloadOnHangup))
    }
    let readTimeout = settings.readTimeout
    let metrics = server.metrics
    let connections = server.connections
    var http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [ConnectionCap(connections) { metrics.connectionRefused() }]
            + ReadDeadline.handlers(limit: readTimeout) { metrics.readTimedOut() })
    http.idleTimeout = .nanoseconds(Int64(settings.idleTimeout.components.seconds) * 1_000_000_000)
    return Application(
        router: buildRouter(server),
        server: .http1(configuration: http),
        configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: nil),
        services: services,
        onServerRunning: { channel in
            let address = channel.localAddress
            await onListening(address?.ipAddress ?? settings.host, address?.port ?? settings.port)
        },
        logger: server.logger)
}

// MARK: - helpers

/// Turns every error a route throws (and the router's own 404/405) into problem+json; a 401 carries
/// `WWW-Authenticate: Bearer` (RFC 6750), with `error="invalid_token"` when a token was sent.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let server: GatehouseServer
    let allowed: AllowedMethods
    var logger: Logger { server.logger }

    func handle(_ request: Hummingbird.Request, context: ServerContext, next: (Hummingbird.Request, ServerContext) async throws -> Response)
        async throws -> Response
    {
        var response = try await answer(request, context: context, next: next)
        if response.status == .unauthorized {
            response.headers[.wwwAuthenticate] = request.headers[.authorization] == nil ? "Bearer" : #"Bearer error="invalid_token""#
        }
        return response
    }

    private func answer(_ request: Hummingbird.Request, context: ServerContext, next: (Hummingbird.Request, ServerContext) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            if error.status == .notFound {
                let methods = allowed.methods(for: request.uri.path)
                if !methods.isEmpty {
                    var response = problemResponse(
                        Problem(status: 405, code: "method_not_allowed", title: "Method Not Allowed", detail: "this path answers \(methods.joined(separator: ", "))"))
                    response.headers[.allow] = methods.joined(separator: ", ")
                    return response
                }
            }
            let status = Int(error.status.code)
            let code =
                switch status {
                case 404: "not_found"
                case 405: "method_not_allowed"
                case 413: "body_too_large"
                default: "http_\(status)"
                }
            return problemResponse(Problem(status: status, code: code, title: error.status.reasonPhrase, detail: status == 404 ? "no such route" : nil))
        } catch is HTTPParserError {
            // A body whose framing does not parse (a malformed Transfer-Encoding or chunk): the client's fault, and a
            // flood of them must not flood the log.
            let client = server.clientKey(context)
            if server.malformedLog.allows(client) {
                logger.warning("malformed request (logged once a minute per client)", metadata: ["http.path": "\(request.uri.path)"])
            }
            var response = problemResponse(.malformedRequest)
            response.headers[.connection] = "close"
            return response
        } catch {
            let problem = Problem.from(error)
            if problem.status >= 500 {
                // The type only: an error's description could carry a value from the request.
                logger.error("request failed", metadata: ["error.type": "\(type(of: error))", "http.path": "\(request.uri.path)"])
            }
            return problemResponse(problem)
        }
    }
}

/// Refuses requests whose shape no route should see: a non-canonical path (an empty segment or a trailing slash,
/// which a load balancer's exact `location` would not match while the router would) is 404; a POST, PUT or PATCH
/// whose Content-Type is given and is not JSON is 415, so no other site can make a browser post a form to the API.
struct RequestShapeMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    func handle(_ request: Hummingbird.Request, context: ServerContext, next: (Hummingbird.Request, ServerContext) async throws -> Response)
        async throws -> Response
    {
        let path = request.uri.path
        if path != "/", path.isEmpty || path.hasSuffix("/") || path.contains("//") || !path.hasPrefix("/") {
            return problemResponse(.notFound)
        }
        if request.method == .post || request.method == .put || request.method == .patch, let type = request.headers[.contentType],
            !Self.isJSON(type)
        {
            return problemResponse(.unsupportedMediaType)
        }
        return try await next(request, context)
    }

    /// `application/json` or a `+json` type, parameters (`; charset=utf-8`) aside.
    static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
    }
}

func problemResponse(_ problem: Problem) -> Response {
    var headers: HTTPFields = [.contentType: "application/problem+json"]
    if let retry = problem.retryAfter { headers[.retryAfter] = String(retry) }
    return Response(
        status: HTTPResponse.Status(code: problem.status), headers: headers,
        body: .init(byteBuffer: ByteBuffer(string: problem.json.rendered())))
}

func json(_ value: JSONText, status: HTTPResponse.Status = .ok, policy: String? = nil) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    if let policy { headers[.gatehousePolicy] = policy }
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: value.rendered())))
}

/// A JSON answer already written as bytes (`DecisionWriter`), with the headers naming the policy version that made it.
func jsonBytes(_ bytes: [UInt8], _ headers: HTTPFields) -> Response {
    Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// The headers of a decision answer (JSON, `Gatehouse-Policy`), built once per policy version rather than once
/// per request: building `HTTPFields` from a literal was about 2,300 instructions of a decide request.
final class DecisionHeaders: Sendable {
    private let cached = Mutex<(hash: String, fields: HTTPFields)?>(nil)

    func fields(for policy: CompiledPolicy) -> HTTPFields {
        let hash = policy.contentHash
        return cached.withLock { cached in
            if let cached, cached.hash == hash { return cached.fields }
            let fields: HTTPFields = [.contentType: "application/json", .gatehousePolicy: hash]
            cached = (hash, fields)
            return fields
        }
    }
}

func text(_ value: String) -> Response {
    Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: value)))
}

/// The body as text, refused with 413 when it is (or says it is) longer than `limit`: a declared length is
/// refused before any byte is read, a streamed one as soon as the limit is passed.
func readBody(_ request: Hummingbird.Request, limit: Int) async throws -> String {
    String(buffer: try await readBytes(request, limit: limit))
}

func readBytes(_ request: Hummingbird.Request, limit: Int) async throws -> ByteBuffer {
    if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit { throw Problem.bodyTooLarge(limit: limit) }
    // By hand rather than `collect(upTo:)`: a body that arrives in one part (the usual small JSON body) is
    // that part itself, with no accumulating buffer to allocate and copy into.
    var parts = request.body.makeAsyncIterator()
    guard var body = try await parts.next() else { return ByteBuffer() }
    guard body.readableBytes <= limit else { throw Problem.bodyTooLarge(limit: limit) }
    while var part = try await parts.next() {
        guard body.readableBytes + part.readableBytes <= limit else { throw Problem.bodyTooLarge(limit: limit) }
        body.writeBuffer(&part)
    }
    return body
}

/// The bearer token, nil without an Authorization header; anything but `Bearer <token>` is a 401.
func bearerToken(_ request: Hummingbird.Request) throws -> String? {
    guard let value = request.headers[.authorization] else { return nil }
    guard value.count > 7, value.prefix(7).lowercased() == "bearer " else { throw Problem.malformedAuthorization }
    let token = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
    guard !token.isEmpty else { throw Problem.malformedAuthorization }
    return token
}

/// The key of the client's per-source limits: the address a trusted load balancer forwarded for, else
/// the peer's address, or `local` when there is none (tests); an IPv6 address by its prefix (`ForwardedClient.limitKey`).
func clientKey(_ context: ServerContext, ipv6Prefix: Int) -> String {
    ForwardedClient.limitKey(context.forwardedClient ?? context.remoteAddress?.ipAddress ?? "local", ipv6Prefix: ipv6Prefix)
}

func requiredBearer(_ request: Hummingbird.Request) throws -> String {
    guard let token = try bearerToken(request) else { throw Problem.missingBearer }
    return token
}
