import Foundation

/// Every error `GatehouseClient` throws: the server's problem (its `code`, `field`, `detail`, `retryAfter`) or a
/// failure on the client's side (`not_signed_in`, `transport`, `unexpected_response`), matchable by `code`.
///
/// It never holds a token or a PIN: the server's problem details name fields, not values, and transport failures keep
/// only the underlying error's own text (a URL error names the URL, never a header or body).
public struct GatehouseClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status of a problem; nil for an error on the client's side.
    public var status: Int?
    /// The problem's stable code (`unauthenticated`, `invalid_request`, `throttled`, ...), or one of the client's own.
    public var code: String
    /// The field at fault (`pin`, `refreshToken`, `requests[2].action`), when one is.
    public var field: String?
    /// What went wrong, in a sentence.
    public var detail: String?
    /// For `throttled` (429): seconds until a retry may succeed. The client never retries a 429 itself.
    public var retryAfter: Int?
    /// The whole problem as the server wrote it, when there was one.
    public var problem: ProblemDetails?
    /// The W3C trace id of the request the server refused, when its tracing is on (the problem's `traceId`): quote it
    /// in a support ticket to find the request's trace and log lines.
    public var traceId: String?

    /// An error with a code of the client's own.
    public init(code: String, detail: String? = nil, field: String? = nil) {
        self.code = code
        self.detail = detail
        self.field = field
    }

    /// The server's problem at `status`.
    public init(_ problem: ProblemDetails) {
        status = problem.status
        code = problem.code
        field = problem.field
        detail = problem.detail
        retryAfter = problem.retryAfter
        self.problem = problem
    }

    /// `code (status): detail [field]`.
    public var description: String {
        var text = code
        if let status { text += " (\(status))" }
        if let detail { text += ": \(detail)" }
        if let field { text += " [\(field)]" }
        if let retryAfter { text += " retry after \(retryAfter) s" }
        if let traceId { text += " trace \(traceId)" }
        return text
    }

    /// The call needs a session and the client has none (or the server ended it).
    public static let notSignedIn = "not_signed_in"
    /// The request did not reach the server, or its answer did not arrive.
    public static let transport = "transport"
    /// The server answered with a status or body the API does not define.
    public static let unexpectedResponse = "unexpected_response"
    /// The server's code for a missing, unknown, expired or revoked token.
    public static let unauthenticated = "unauthenticated"
    /// The server's code for too many requests (429), with `retryAfter`.
    public static let throttled = "throttled"

    /// Whether the server refused the caller's credentials (401 `unauthenticated`).
    public var isUnauthenticated: Bool { status == 401 && code == Self.unauthenticated }

    static func missingSession(_ detail: String = "sign in first") -> GatehouseClientError {
        GatehouseClientError(code: notSignedIn, detail: detail)
    }

    static func transportFailure(_ error: any Error) -> GatehouseClientError {
        // The underlying error's type and, for URL errors, its code: never the request it was carrying.
        if let url = error as? URLError {
            return GatehouseClientError(code: transport, detail: "URL error \(url.code.rawValue)")
        }
        return GatehouseClientError(code: transport, detail: "\(type(of: error))")
    }
}
