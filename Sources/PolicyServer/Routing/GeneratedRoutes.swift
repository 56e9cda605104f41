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

/// Every generated route's handler, by group: the controller method that answers it as it was registered by hand
/// (`sent`), the one list of these routes as `Routes.swift` is of the hand-written ones. The routes whose handlers read
/// the generated input (a path parameter) and answer the spec's 204 sit in their controller's file (the operator's PIN
/// unlock and user deletion, the console's session and subscription ends).
extension GeneratedRoutes {
    // Signing in and out.
    func postAuthAnonymous(_ input: Operations.PostAuthAnonymous.Input) async throws -> Operations.PostAuthAnonymous.Output { .undocumented(statusCode: try await sent(SessionController(server: server).anonymous), .init()) }
    func postAuthSignout(_ input: Operations.PostAuthSignout.Input) async throws -> Operations.PostAuthSignout.Output { .undocumented(statusCode: try await sent(SessionController(server: server).signOut), .init()) }
    func postAuthSignoutEverywhere(_ input: Operations.PostAuthSignoutEverywhere.Input) async throws -> Operations.PostAuthSignoutEverywhere.Output { .undocumented(statusCode: try await sent(SessionController(server: server).signOutEverywhere), .init()) }
    func postAuthAppleNonce(_ input: Operations.PostAuthAppleNonce.Input) async throws -> Operations.PostAuthAppleNonce.Output { .undocumented(statusCode: try await sent(SessionController(server: server).appleNonce), .init()) }
    func postAuthRefresh(_ input: Operations.PostAuthRefresh.Input) async throws -> Operations.PostAuthRefresh.Output { .undocumented(statusCode: try await sent(SessionController(server: server).refresh), .init()) }
    func postAuthPinRegister(_ input: Operations.PostAuthPinRegister.Input) async throws -> Operations.PostAuthPinRegister.Output { .undocumented(statusCode: try await sent(SessionController(server: server).registerPIN), .init()) }
    func postAuthPinSignin(_ input: Operations.PostAuthPinSignin.Input) async throws -> Operations.PostAuthPinSignin.Output { .undocumented(statusCode: try await sent(SessionController(server: server).signInPIN), .init()) }
    func postAuthApple(_ input: Operations.PostAuthApple.Input) async throws -> Operations.PostAuthApple.Output { .undocumented(statusCode: try await sent(SessionController(server: server).signInApple), .init()) }
    // The account's credentials: PIN, Apple id, device keys.
    func deleteAuthAppleLink(_ input: Operations.DeleteAuthAppleLink.Input) async throws -> Operations.DeleteAuthAppleLink.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).unlinkApple), .init()) }
    func putAuthPin(_ input: Operations.PutAuthPin.Input) async throws -> Operations.PutAuthPin.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).setPIN), .init()) }
    func postAuthPinChange(_ input: Operations.PostAuthPinChange.Input) async throws -> Operations.PostAuthPinChange.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).changePIN), .init()) }
    func postAuthPinVerify(_ input: Operations.PostAuthPinVerify.Input) async throws -> Operations.PostAuthPinVerify.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).verifyPIN), .init()) }
    func postAuthAppleLink(_ input: Operations.PostAuthAppleLink.Input) async throws -> Operations.PostAuthAppleLink.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).linkApple), .init()) }
    func postAuthAppleNotifications(_ input: Operations.PostAuthAppleNotifications.Input) async throws -> Operations.PostAuthAppleNotifications.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).appleNotification), .init()) }
    func postAuthDeviceEnroll(_ input: Operations.PostAuthDeviceEnroll.Input) async throws -> Operations.PostAuthDeviceEnroll.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).enrollDevice), .init()) }
    func postAuthDeviceChallenge(_ input: Operations.PostAuthDeviceChallenge.Input) async throws -> Operations.PostAuthDeviceChallenge.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).deviceChallenge), .init()) }
    func postAuthDeviceVerify(_ input: Operations.PostAuthDeviceVerify.Input) async throws -> Operations.PostAuthDeviceVerify.Output { .undocumented(statusCode: try await sent(CredentialController(server: server).verifyDevice), .init()) }
    // The signed-in account.
    func getMe(_ input: Operations.GetMe.Input) async throws -> Operations.GetMe.Output { .undocumented(statusCode: try await sent(AccountController(server: server).profile), .init()) }
    func getMePrivacy(_ input: Operations.GetMePrivacy.Input) async throws -> Operations.GetMePrivacy.Output { .undocumented(statusCode: try await sent(AccountController(server: server).privacy), .init()) }
    func getMeExport(_ input: Operations.GetMeExport.Input) async throws -> Operations.GetMeExport.Output { .undocumented(statusCode: try await sent(AccountController(server: server).export), .init()) }
    func deleteMe(_ input: Operations.DeleteMe.Input) async throws -> Operations.DeleteMe.Output { .undocumented(statusCode: try await sent(AccountController(server: server).delete), .init()) }
    func putMeUsername(_ input: Operations.PutMeUsername.Input) async throws -> Operations.PutMeUsername.Output { .undocumented(statusCode: try await sent(AccountController(server: server).setUsername), .init()) }
    func putMePrivacy(_ input: Operations.PutMePrivacy.Input) async throws -> Operations.PutMePrivacy.Output { .undocumented(statusCode: try await sent(AccountController(server: server).setPrivacy), .init()) }
    // App Store purchases.
    func postMePurchases(_ input: Operations.PostMePurchases.Input) async throws -> Operations.PostMePurchases.Output { .undocumented(statusCode: try await sent(PurchaseController(server: server).purchase), .init()) }
    func postAppStoreNotifications(_ input: Operations.PostAppStoreNotifications.Input) async throws -> Operations.PostAppStoreNotifications.Output { .undocumented(statusCode: try await sent(PurchaseController(server: server).notification), .init()) }
    // Shared spaces.
    func postSpacesByIdCodes(_ input: Operations.PostSpacesByIdCodes.Input) async throws -> Operations.PostSpacesByIdCodes.Output { .undocumented(statusCode: try await sent(SpaceController(server: server).newCode), .init()) }
    func postSpaces(_ input: Operations.PostSpaces.Input) async throws -> Operations.PostSpaces.Output { .undocumented(statusCode: try await sent(SpaceController(server: server).create), .init()) }
    func postSpacesJoin(_ input: Operations.PostSpacesJoin.Input) async throws -> Operations.PostSpacesJoin.Output { .undocumented(statusCode: try await sent(SpaceController(server: server).join), .init()) }
    // The policy version and its bundle.
    func getPolicy(_ input: Operations.GetPolicy.Input) async throws -> Operations.GetPolicy.Output { .undocumented(statusCode: try await sent(PolicyController(server: server).status), .init()) }
    func getBundle(_ input: Operations.GetBundle.Input) async throws -> Operations.GetBundle.Output { .undocumented(statusCode: try await sent(PolicyController(server: server).bundle), .init()) }
    // The inverse questions: a plan over every resource of a type, and the store's list of the bearer's resources.
    func postPlan(_ input: Operations.PostPlan.Input) async throws -> Operations.PostPlan.Output { .undocumented(statusCode: try await sent(ListController(server: server).plan), .init()) }
    func getResources(_ input: Operations.GetResources.Input) async throws -> Operations.GetResources.Output { .undocumented(statusCode: try await sent(ListController(server: server).resources), .init()) }
    // The operator's log reads.
    func getOperatorDecisions(_ input: Operations.GetOperatorDecisions.Input) async throws -> Operations.GetOperatorDecisions.Output { .undocumented(statusCode: try await sent(LogController(server: server).decisions), .init()) }
    func getOperatorAudit(_ input: Operations.GetOperatorAudit.Input) async throws -> Operations.GetOperatorAudit.Output { .undocumented(statusCode: try await sent(LogController(server: server).audit), .init()) }
    func getOperatorShadow(_ input: Operations.GetOperatorShadow.Input) async throws -> Operations.GetOperatorShadow.Output { .undocumented(statusCode: try await sent(LogController(server: server).shadow), .init()) }
    // The operator's writes.
    func postOperatorAppleCredentialState(_ input: Operations.PostOperatorAppleCredentialState.Input) async throws -> Operations.PostOperatorAppleCredentialState.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).appleCredentialState), .init()) }
    func putOperatorUsersByIdRoles(_ input: Operations.PutOperatorUsersByIdRoles.Input) async throws -> Operations.PutOperatorUsersByIdRoles.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).setRoles), .init()) }
    func putOperatorUsersByIdSubscription(_ input: Operations.PutOperatorUsersByIdSubscription.Input) async throws -> Operations.PutOperatorUsersByIdSubscription.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).setSubscription), .init()) }
    func postOperatorUsersByIdLegacyPin(_ input: Operations.PostOperatorUsersByIdLegacyPin.Input) async throws -> Operations.PostOperatorUsersByIdLegacyPin.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).importLegacyPIN), .init()) }
    func postOperatorUsersByIdUsage(_ input: Operations.PostOperatorUsersByIdUsage.Input) async throws -> Operations.PostOperatorUsersByIdUsage.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).userUsage), .init()) }
    func postOperatorResourcesByIdUsage(_ input: Operations.PostOperatorResourcesByIdUsage.Input) async throws -> Operations.PostOperatorResourcesByIdUsage.Output { .undocumented(statusCode: try await sent(OperatorController(server: server).resourceUsage), .init()) }
    // The operator console's reads and changes.
    func postOperatorUsersByIdDecisionsByDecisionIdExplain(_ input: Operations.PostOperatorUsersByIdDecisionsByDecisionIdExplain.Input) async throws -> Operations.PostOperatorUsersByIdDecisionsByDecisionIdExplain.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).explainAgain), .init()) }
    func getOperatorUsersById(_ input: Operations.GetOperatorUsersById.Input) async throws -> Operations.GetOperatorUsersById.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).user), .init()) }
    func getOperatorPolicy(_ input: Operations.GetOperatorPolicy.Input) async throws -> Operations.GetOperatorPolicy.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).policy), .init()) }
    func postOperatorUsersByIdSignoutEverywhere(_ input: Operations.PostOperatorUsersByIdSignoutEverywhere.Input) async throws -> Operations.PostOperatorUsersByIdSignoutEverywhere.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).signOutEverywhere), .init()) }
    func getOperatorUsers(_ input: Operations.GetOperatorUsers.Input) async throws -> Operations.GetOperatorUsers.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).findUsers), .init()) }
    func postOperatorUsersByIdExplain(_ input: Operations.PostOperatorUsersByIdExplain.Input) async throws -> Operations.PostOperatorUsersByIdExplain.Output { .undocumented(statusCode: try await sent(ConsoleController(server: server).explain), .init()) }
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
/// The generated decoder is given the method, the route's path (its template, made once at registration) and the
/// request's path parameters: no header, no query, no body (the server side is generated with every body and query
/// parameter optional, so it refuses none of them missing: scripts/generate-client.sh). Otherwise it would refuse what
/// it cannot read (a malformed `Accept`, a query value not of its declared type, an empty optional body) with the
/// runtime's errors, before the handler has checked the credential; the handler reads the request as it came
/// (`RouteRequest.current`) with the hand-written readers, so unknown parameters, body limits, unknown-field refusals,
/// their 400 details and the order of the checks stay as they were.
struct GeneratedRouteTransport: ServerTransport {
    let routes: RouteBuilder

    func register(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        method: HTTPRequest.Method, path: String
    ) throws {
        let route = "\(method) \(path)"
        let console = GeneratedRoutes.console.contains(route)
        let register = GeneratedRoutes.writes.contains(route) ? routes.write : routes.on
        // What the generated decoder reads of the request besides the path's parameters, made once: the method and the
        // route's own path (no query; the request's path is the hand-written readers').
        let head = HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
        let hasParameters = path.contains("{")
        register(method, path) { request, context in
            let current = RouteRequest(request: request, context: context)
            return try await RouteRequest.$current.withValue(current) {
                do {
                    let parameters = hasParameters ? [String: Substring](context.parameters.map { (String($0.0), $0.1) }) { first, _ in first } : [:]
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
