import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime
import PolicyServerAPI

/// The routes whose request decoding, dispatch and answers are generated from docs/openapi.yaml by
/// swift-openapi-generator (Sources/PolicyServerAPI/Generated; the operations are listed in
/// scripts/openapi-generator/openapi-server-config.yaml). Each operation is implemented in an extension in its
/// controller's file and calls the controller's method: what a route does stays in the controller and the facade. The
/// decision routes are not here (docs/architecture.md says why).
struct GeneratedRoutes: APIProtocol {
    let operators: OperatorController
    let console: ConsoleController

    /// The console's generated routes ("METHOD path", as in the route table): their answers carry the console's
    /// headers (`ConsolePages.protect`: no-store above all), which the spec does not declare, so the transport adds
    /// them. GeneratedServerTests checks each names a generated route.
    static let console: Set<String> = [
        "DELETE /v1/operator/users/{id}/sessions/{sessionId}",
        "DELETE /v1/operator/users/{id}/subscription",
    ]
}

/// The Hummingbird request and context of the generated route being answered: its handler checks the operator
/// credential and the rate limits from them, and reads bodies and queries with the hand-written readers, as before.
struct RouteRequest: Sendable {
    let request: Hummingbird.Request
    let context: ServerContext

    @TaskLocal static var current: RouteRequest?

    /// The request being answered; only a generated route's handler, called through `GeneratedRouteTransport`, asks.
    static func now() throws -> RouteRequest {
        guard let current else { throw Problem(.server(.internal), detail: "a generated route's handler ran outside its route") }
        return current
    }
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
            try await RouteRequest.$current.withValue(RouteRequest(request: request, context: context)) {
                do {
                    var response = try await responder.respond(to: request, context: context)
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
