import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime
import PolicyServerAPI
import Synchronization

/// The routes whose request decoding, dispatch and answers are generated from docs/openapi.yaml by
/// swift-openapi-generator (Sources/PolicyServerAPI/Generated; the operations are listed in
/// scripts/openapi-generator/openapi-server-config.yaml). Each operation is implemented in an extension in its
/// controller's file and calls the controller's method: what a route does stays in the controller and the facade. The
/// decision routes are not here (docs/architecture.md says why).
struct GeneratedRoutes: APIProtocol {
    let operators: OperatorController
    let console: ConsoleController
    let logs: LogController

    /// The console's generated routes ("METHOD path", as in the route table): their answers carry the console's
    /// headers (`ConsolePages.protect`: no-store above all), which the spec does not declare, so the transport adds
    /// them. GeneratedServerTests checks each names a generated route.
    static let console: Set<String> = [
        "DELETE /v1/operator/users/{id}/sessions/{sessionId}",
        "DELETE /v1/operator/users/{id}/subscription",
    ]

    /// The query parameters each generated route reads, as docs/openapi.yaml declares them; a route not listed reads
    /// none. The generated decoder never sees the query (`RouteRequest.pathOnly`): the route's hand-written reader takes
    /// these and refuses any other by name, after the operator credential is checked, as before. GeneratedAnswerTests
    /// compares the table with the spec's parameters of every generated operation.
    static let queries: [String: Set<String>] = [
        "GET /v1/operator/decisions": LogController.decisionFilters.union(LogQueryParameters.paging),
        "GET /v1/operator/audit": LogController.auditFilters.union(LogQueryParameters.paging),
        "GET /v1/operator/users/{id}": ConsoleController.userQuery,
        "GET /v1/operator/policy": ConsoleController.policyQuery,
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

    /// What the generated decoder is given: the method and the path without its query, no header and no body. The
    /// generated decoder refuses what it cannot read (a malformed `Accept`, a query value not of its declared type) with
    /// the runtime's errors, before the handler has checked the operator credential; the handler reads the query, the
    /// headers and the body of the request as it came (`request`) with the hand-written readers instead, so unknown
    /// query parameters, malformed values and their 400 details, and the order of the checks stay as they were.
    /// Only the path parameters are the generated `input`'s.
    static func pathOnly(_ request: Hummingbird.Request) -> Hummingbird.Request {
        let path = request.head.path.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "" }
        let head = HTTPRequest(method: request.method, scheme: request.head.scheme, authority: request.head.authority, path: path)
        return Hummingbird.Request(head: head, body: .init(buffer: ByteBuffer()))
    }
}

/// The hand-written answer of a generated route being answered (`RouteRequest.send`), nil until its handler sends one.
final class SentAnswer: Sendable {
    let answer = Mutex<Response?>(nil)
}

/// Registers the generated handlers through `RouteBuilder.on`, so a generated route has the request deadline, the place
/// in the route table and the `Allow` list of a hand-written one, behind the same middlewares (tracing, forwarded
/// client, problems, request shape). swift-openapi-hummingbird turns the Hummingbird request into the generated
/// server's and its answer back; an error a handler throws reaches `ProblemMiddleware` as it was thrown, not wrapped in
/// the runtime's `ServerError`, so a problem answer is the same whichever way the route is written.
struct GeneratedRouteTransport: RouterMethods, ServerTransport {
    typealias Context = ServerContext
    let routes: RouteBuilder

    @discardableResult func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == ServerContext {
        let console = GeneratedRoutes.console.contains("\(method) \(path.description)")
        routes.on(method, path.description) { request, context in
            let route = RouteRequest(request: request, context: context)
            return try await RouteRequest.$current.withValue(route) {
                do {
                    var response = try await responder.respond(to: RouteRequest.pathOnly(request), context: context)
                    if let sent = route.sent.answer.withLock({ $0.take() }) { response = sent }
                    if console { ConsolePages.protect(&response.headers) }
                    return response
                } catch let error as ServerError {
                    throw error.underlyingError
                }
            }
        }
        return self
    }

    /// Middlewares go on the whole router (`buildRouterAndTable`), never on the generated routes alone.
    func add(middleware: any MiddlewareProtocol<Request, Response, ServerContext>) -> Self {
        routes.router.add(middleware: middleware)
        return self
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
