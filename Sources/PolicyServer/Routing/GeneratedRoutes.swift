import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OpenAPIRuntime
import PolicyServerAPI
import Synchronization

/// The routes whose request decoding, dispatch and answers are generated from docs/openapi.yaml by
/// swift-openapi-generator (Sources/PolicyServerAPI/Generated; the operations are listed in
/// scripts/openapi-generator/openapi-server-config.yaml). Each operation is implemented in an extension in its
/// controller's file and calls the controller's method: what a route does stays in the controller and the facade. The
/// decision routes are not here (docs/architecture.md says why).
struct GeneratedRoutes: APIProtocol {
    /// Each handler makes its controller from the server (a controller is the server and nothing else).
    let server: GatehouseServer

    /// Answers with a controller's method as it was registered by hand (`RouteRequest.answer`): the status for the
    /// operation's `.undocumented(statusCode:_:)`, whose `Response` the transport sends as the controller wrote it.
    func sent(_ handler: (Hummingbird.Request, ServerContext) async throws -> Response) async throws -> Int {
        try await RouteRequest.answer(handler)
    }

    /// The console's generated routes ("METHOD path", as in the route table): their answers carry the console's
    /// headers (`ConsolePages.protect`: no-store above all), which the spec does not declare, so the transport adds
    /// them. GeneratedServerTests checks each names a generated route.
    static let console: Set<String> = [
        "DELETE /v1/operator/users/{id}/sessions/{sessionId}",
        "DELETE /v1/operator/users/{id}/subscription",
    ]

    /// The generated routes under the write quotas (`RouteBuilder.write`): the bearer required and a write taken before
    /// the handler runs, as their hand-written registration did.
    static let writes: Set<String> = [
        "DELETE /v1/auth/apple/link",
        "GET /v1/me/export",
        "DELETE /v1/me",
        "POST /v1/spaces/{id}/codes",
        "PUT /v1/me/username",
        "PUT /v1/me/privacy",
        "POST /v1/me/purchases",
        "POST /v1/spaces",
        "POST /v1/spaces/join",
    ]

    /// The query parameters each generated route reads, as docs/openapi.yaml declares them; a route not listed reads
    /// none. The generated decoder never sees the query (`GeneratedRouteTransport`): the route's hand-written reader takes
    /// these and refuses any other by name, after the operator credential is checked, as before. GeneratedAnswerTests
    /// compares the table with the spec's parameters of every generated operation.
    static let queries: [String: Set<String>] = [
        "GET /v1/operator/decisions": LogController.decisionFilters.union(LogQueryParameters.paging),
        "GET /v1/operator/audit": LogController.auditFilters.union(LogQueryParameters.paging),
        "GET /v1/operator/users": ConsoleController.findUsersQuery,
        "GET /v1/operator/users/{id}": ConsoleController.userQuery,
        "GET /v1/operator/policy": ConsoleController.policyQuery,
        "POST /v1/operator/users/{id}/decisions/{decisionId}/explain": ConsoleController.explainQuery,
        "POST /v1/operator/users/{id}/explain": ConsoleController.explainQuery,
        "GET /v1/resources": ListQuery.parameters,
    ]
}

/// The Hummingbird request and context of the generated route being answered: its handler checks the operator
/// credential and the rate limits from them, and reads bodies and queries with the hand-written readers, as before.
struct RouteRequest: Sendable {
    let request: Hummingbird.Request
    let context: ServerContext
    /// The answer a handler wrote by hand (`send`), which the transport answers with instead of the generated one.
    let sent = SentAnswer()

    /// Answers with `response`, today's bytes and headers as the controller wrote them: the handler returns the
    /// operation's `.undocumented(statusCode: send(...), .init())` and `GeneratedRouteTransport` answers with `response`
    /// itself (the generated serializer would re-encode a typed value with `JSONEncoder`, where today's JSON answers are
    /// `JSONText` bytes in the fields' order; docs/architecture.md "Generated routes").
    func send(_ response: Response) -> Int {
        sent.answer.withLock { $0 = response }
        return response.status.code
    }

    @TaskLocal static var current: RouteRequest?

    /// The request being answered; only a generated route's handler, called through `GeneratedRouteTransport`, asks.
    static func now() throws -> RouteRequest {
        guard let current else { throw Problem(.server(.internal), detail: "a generated route's handler ran outside its route") }
        return current
    }

    /// Answers with a controller's method as it was registered by hand: its `Response` as it wrote it (`send`). The
    /// status is for the operation's `.undocumented(statusCode:_:)`.
    static func answer(_ handler: (Hummingbird.Request, ServerContext) async throws -> Response) async throws -> Int {
        let route = try now()
        return route.send(try await handler(route.request, route.context))
    }
}

/// The hand-written answer of a generated route being answered (`RouteRequest.send`), nil until its handler sends one.
final class SentAnswer: Sendable {
    let answer = Mutex<Response?>(nil)
}

/// Registers the generated handlers through `RouteBuilder.on` (`RouteBuilder.write` for `GeneratedRoutes.writes`), so a
/// generated route has the request deadline, the place in the route table, the `Allow` list and the write quota of a
/// hand-written one, behind the same middlewares (tracing, forwarded client, problems, request shape). An error a
/// handler throws reaches `ProblemMiddleware` as it was thrown, not wrapped in the runtime's `ServerError`, so a problem
/// answer is the same whichever way the route is written.
///
/// The generated decoder is given the method, the path without its query and the path's parameters: no header, no
/// query, no body. Otherwise it would refuse what it cannot read (a malformed `Accept`, a query value not of its declared
/// type, an empty optional body) with the runtime's errors, before the handler has checked the credential; the handler
/// reads the request as it came (`RouteRequest.current`) with the hand-written readers, so unknown parameters, body
/// limits, unknown-field refusals, their 400 details and the order of the checks stay as they were.
struct GeneratedRouteTransport: ServerTransport {
    let routes: RouteBuilder

    func register(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        method: HTTPRequest.Method, path: String
    ) throws {
        let route = "\(method) \(path)"
        let console = GeneratedRoutes.console.contains(route)
        let register = GeneratedRoutes.writes.contains(route) ? routes.write : routes.on
        register(method, path) { request, context in
            let current = RouteRequest(request: request, context: context)
            return try await RouteRequest.$current.withValue(current) {
                do {
                    let head = HTTPRequest(method: request.method, scheme: nil, authority: nil, path: String(request.uri.path))
                    let parameters = [String: Substring](context.parameters.map { (String($0.0), $0.1) }) { first, _ in first }
                    let (answer, body) = try await handler(head, nil, ServerRequestMetadata(pathParameters: parameters))
                    var response = current.sent.answer.withLock { $0.take() } ?? Response(answer, body)
                    if console { ConsolePages.protect(&response.headers) }
                    return response
                } catch let error as ServerError {
                    throw error.underlyingError
                }
            }
        }
    }
}

extension Response {
    /// A generated answer (a typed one: the 204s), as swift-openapi-hummingbird writes it.
    init(_ answer: HTTPResponse, _ body: HTTPBody?) {
        guard let body else {
            self.init(status: answer.status, headers: answer.headerFields, body: .init(byteBuffer: ByteBuffer()))
            return
        }
        let buffers = body.map { ByteBuffer(bytes: $0) }
        let written: ResponseBody
        if case .known(let length) = body.length {
            written = .init(contentLength: Int(length)) { writer in
                for try await buffer in buffers { try await writer.write(buffer) }
                try await writer.finish(nil)
            }
        } else {
            written = .init(asyncSequence: buffers)
        }
        self.init(status: answer.status, headers: answer.headerFields, body: written)
    }
}

extension RouteBuilder {
    /// Registers every operation of the generated `APIProtocol` with `handlers`.
    func generated(_ handlers: some APIProtocol) {
        do {
            try handlers.registerHandlers(on: GeneratedRouteTransport(routes: self))
        } catch {
            // GeneratedRouteTransport never throws; the generator's signature does.
            preconditionFailure("registering the generated routes failed: \(error)")
        }
    }
}
