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
        // The request shape's refusals first, in this layer rather than one of their own (a middleware layer a request
        // goes through costs an async frame and a closure call; issue 41).
        if let refusal = RequestShapeMiddleware.refusal(request) { return refusal }
        var response = try await answer(request, context: context, next: next)
        if response.status == .unauthorized {
            response.headers[.wwwAuthenticate] = request.headers[.authorization] == nil ? "Bearer" : Response.invalidToken
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
                    var response = problemResponse(.methodNotAllowed(methods))
                    response.headers[.allow] = methods.joined(separator: ", ")
                    return response
                }
            }
            return problemResponse(Problem(error))
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
        if let refusal = Self.refusal(request) { return refusal }
        return try await next(request, context)
    }

    /// The answer to a request of a shape no route should see (404, 415), nil for every other. `ProblemMiddleware`
    /// asks this first, so the server runs it without a layer of its own.
    static func refusal(_ request: Hummingbird.Request) -> Response? {
        if !isCanonical(request.uri.path) {
            return problemResponse(.notFound)
        }
        if request.method == .post || request.method == .put || request.method == .patch, let type = request.headers.value(.contentType),
            !isJSON(type)
        {
            return problemResponse(.unsupportedMediaType)
        }
        return nil
    }

    /// `/`, or `/` and segments that are not empty: no `//`, no trailing `/` (one pass over the bytes, no allocation).
    static func isCanonical(_ path: String) -> Bool {
        var utf8 = path.utf8.makeIterator()
        guard utf8.next() == UInt8(ascii: "/") else { return false }
        guard var last = utf8.next() else { return true }  // "/"
        if last == UInt8(ascii: "/") { return false }
        while let byte = utf8.next() {
            if byte == UInt8(ascii: "/") && last == UInt8(ascii: "/") { return false }
            last = byte
        }
        return last != UInt8(ascii: "/")
    }

    /// `application/json` or a `+json` type, parameters (`; charset=utf-8`) aside.
    static func isJSON(_ contentType: String) -> Bool {
        if contentType == "application/json" { return true }  // the common case, without splitting or lowercasing
        let media = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
    }
}
