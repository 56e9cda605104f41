package import Foundation
package import HTTPTypes
package import OpenAPIRuntime
internal import PolicyModel

/// The bearer of the call in progress: set around each generated call by `GatehouseClient`, read by `GatehouseMiddleware`.
package enum Bearer {
    @TaskLocal package static var token: String?
}

/// Adds `Authorization: Bearer` from `Bearer.token`, tells `clock` each answer's `Date`, and turns every answer of
/// status 400 or more into a `GatehouseClientError` carrying the problem, before the generated code parses it; an
/// answer that says the token sent was refused (`WWW-Authenticate: Bearer error="invalid_token"`) is `unauthenticated`.
package struct GatehouseMiddleware: ClientMiddleware {
    /// Largest problem body read (the server's are a few hundred bytes).
    static let problemLimit = 64 * 1024
    /// Where the server's time is learnt; nil: not learnt.
    let clock: ServerClock?
    /// Thrown for every request instead of sending it (`insecure_transport`: plain http to another machine).
    let refusal: GatehouseClientError?
    /// The app's tracer's context for the call in progress (`GatehouseClient`'s `traceContext`); nil: none sent.
    let traceContext: (@Sendable () -> [String: String])?

    package init(clock: ServerClock? = nil, refusal: GatehouseClientError? = nil, traceContext: (@Sendable () -> [String: String])? = nil) {
        self.clock = clock
        self.refusal = refusal
        self.traceContext = traceContext
    }

    /// The operations that create a session, which name the device (`Gatehouse-Device`, docs/console.md).
    static let signIns: Set<String> = ["postAuthAnonymous", "postAuthPinRegister", "postAuthPinSignin", "postAuthApple"]
    static let deviceHeader = HTTPField.Name("Gatehouse-Device")!

    /// The W3C Trace Context headers, the only ones the trace hook may set (never `Authorization` or another header).
    static let traceHeaders: [(key: String, name: HTTPField.Name)] = [("traceparent", HTTPField.Name("traceparent")!), ("tracestate", HTTPField.Name("tracestate")!)]

    package func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if let refusal { throw refusal }
        var request = request
        if let token = Bearer.token { request.headerFields[.authorization] = "Bearer \(token)" }
        // The device on the sign-ins that make a session, as sent (the generated code would percent-encode it: `iPhone15%2C2`).
        if Self.signIns.contains(operationID), let device = DeviceModel.identifier { request.headerFields[Self.deviceHeader] = device }
        if let traceContext {
            let context = traceContext()
            for (key, name) in Self.traceHeaders {
                // Case-insensitive, as a propagator may spell the key either way; a value with a line break is not sent.
                if let value = context.first(where: { $0.key.lowercased() == key })?.value, !value.contains(where: \.isNewline) {
                    request.headerFields[name] = value
                }
            }
        }
        let sentAt = clock?.deviceNow()
        let (response, responseBody) = try await next(request, body, baseURL)
        if let clock, let sentAt, let date = response.headerFields[.date] { clock.observe(dateHeader: date, sentAt: sentAt) }
        if response.status.code < 300, Bearer.token != nil, response.headerFields[.wwwAuthenticate]?.contains("invalid_token") == true {
            // A decision or plan made for a signed-out subject because the token was refused (expired by the server's
            // clock, revoked): refused like a 401, so the client refreshes and asks again rather than show it.
            var error = GatehouseClientError(code: GatehouseClientError.unauthenticated, detail: "the server did not accept the access token")
            error.status = 401
            throw error
        }
        if [301, 302, 303, 307, 308].contains(response.status.code) {
            // The transport follows a redirect only within the server's origin: this one pointed elsewhere.
            var error = GatehouseClientError(
                code: CredentialPolicy.redirectRefused, detail: "the server redirected to another origin; the client sends credentials only to its server")
            error.status = response.status.code
            throw error
        }
        guard response.status.code >= 400 else { return (response, responseBody) }
        var bytes = Data()
        if let responseBody { bytes = (try? await Data(collecting: responseBody, upTo: Self.problemLimit)) ?? Data() }
        if let problem = try? JSONDecoder().decode(ProblemDetails.self, from: bytes) {
            var error = GatehouseClientError(problem)
            error.traceId = (try? JSONDecoder().decode(ProblemTrace.self, from: bytes))?.traceId
            if error.retryAfter == nil, let header = response.headerFields[.retryAfter], let seconds = Int(header) { error.retryAfter = seconds }
            throw error
        }
        var error = GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "HTTP \(response.status.code) without a problem body")
        error.status = response.status.code
        throw error
    }
}

/// RFC 3339 dates as the server writes and reads them (`Timestamp`): with or without a fraction.
struct ContractDateTranscoder: DateTranscoder {
    func encode(_ date: Date) throws -> String { Timestamp.format(date) }
    func decode(_ text: String) throws -> Date {
        guard let date = Timestamp.parse(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an RFC 3339 timestamp"))
        }
        return date
    }
}

/// The client's own error for anything a generated call throws: the middleware's `GatehouseClientError` as it is,
/// anything else as `transport` (never the runtime's `ClientError`, whose description shows the request's headers).
func clientError(_ error: any Error) -> GatehouseClientError {
    if let error = error as? GatehouseClientError { return error }
    if let error = error as? ClientError {
        if let inner = error.underlyingError as? GatehouseClientError { return inner }
        if error.underlyingError is DecodingError {
            return GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "the answer of \(error.operationID) did not decode")
        }
        return .transportFailure(error.underlyingError)
    }
    if error is CancellationError { return GatehouseClientError(code: "cancelled") }
    return .transportFailure(error)
}

/// The problem's `traceId` extension member (a server with tracing on): read beside `ProblemDetails`.
struct ProblemTrace: Decodable {
    var traceId: String?
}
