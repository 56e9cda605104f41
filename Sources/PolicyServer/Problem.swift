import Foundation
import Gatehouse
import Hummingbird
import Identity
import PolicyModel

/// Every problem code the HTTP API answers, with its status and title: the one list a client switches on
/// (`docs/openapi.yaml` lists the same codes as the `ProblemCode` schema; OpenAPISpecTests compares them).
///
/// The server's own codes are `Server`; the identity layer's are its `IdentityError.Code`, not restated here. The
/// raw value is the wire form (`code`), and `urn:gatehouse:problem:<code>` its RFC 9457 `type`.
public enum ProblemCode: Sendable, Hashable, CaseIterable, RawRepresentable {
    /// A refusal of the server's own: HTTP, bodies, the operator credential, readiness.
    case server(Server)
    /// A refusal of the identity layer, in its own wire form (`unauthenticated`, `throttled`, `not_found`, ...).
    case identity(IdentityError.Code)

    /// The server's own codes (none the identity layer also has), spelled as their case names in snake case.
    public enum Server: CaseIterable, SpelledCases, Sendable {
        package static let spelling = CaseSpelling.snake

        // The HTTP exchange: a method, media type or framing the server does not take, a slow or failed read.
        case methodNotAllowed, unsupportedMediaType, malformedRequest
        /// `httpError`: an HTTP error of the framework's with no code of its own (its status is kept).
        case readTimeout, httpError
        // The body: too large, not JSON, not a valid request (with the reader's `field`, `kind` and `offset`).
        case bodyTooLarge, invalidJSON, invalidRequest
        // Who may ask: the operator credential, and who names a decision's subject.
        case operatorCredentialRequired, subjectWithBearer, callerSubjectNotTrusted
        // The server itself: its database not ready, an unexpected failure (logged by type, never detailed).
        case notReady, `internal`

        /// The HTTP status it is answered with.
        var status: Int {
            switch self {
            case .malformedRequest, .invalidJSON, .invalidRequest, .subjectWithBearer: 400
            case .operatorCredentialRequired: 401
            case .callerSubjectNotTrusted: 403
            case .methodNotAllowed: 405
            case .readTimeout: 408
            case .bodyTooLarge: 413
            case .unsupportedMediaType: 415
            case .internal, .httpError: 500
            case .notReady: 503
            }
        }

        var title: String {
            switch self {
            case .methodNotAllowed: "Method Not Allowed"
            case .bodyTooLarge: "Body too large"
            case .unsupportedMediaType: "Unsupported Media Type"
            case .malformedRequest: "Bad Request"
            case .invalidJSON, .invalidRequest: "Invalid request"
            case .readTimeout: "Request Timeout"
            case .operatorCredentialRequired: "Operator credential required"
            case .subjectWithBearer: "Subject and bearer token both given"
            case .callerSubjectNotTrusted: "Caller-asserted subject not trusted"
            case .notReady: "Not ready"
            case .internal: "Internal error"
            case .httpError: "HTTP error"
            }
        }
    }

    public static var allCases: [ProblemCode] { Server.allCases.map(ProblemCode.server) + IdentityError.Code.allCases.map(ProblemCode.identity) }

    /// The code of a wire form, the server's or the identity layer's.
    public init?(rawValue: String) {
        if let own = Server(rawValue: rawValue) {
            self = .server(own)
        } else if let identity = IdentityError.Code(rawValue: rawValue) {
            self = .identity(identity)
        } else {
            return nil
        }
    }

    /// The wire form: the problem's `code`.
    public var rawValue: String {
        switch self {
        case .server(let code): code.rawValue
        case .identity(let code): code.rawValue
        }
    }

    /// The HTTP status it is answered with.
    public var status: Int {
        switch self {
        case .server(let code): code.status
        case .identity(let code): Self.identityStatusAndTitle(code).status
        }
    }

    /// The problem's `title`: the same for every problem of the code.
    public var title: String {
        switch self {
        case .server(let code): code.title
        case .identity(let code): Self.identityStatusAndTitle(code).title
        }
    }

    /// The RFC 9457 `type`: `urn:gatehouse:problem:<code>` (a name, not a page to fetch: RFC 9457 allows that, and a
    /// client keys on it or on `code`).
    public var typeURI: String { "urn:gatehouse:problem:" + rawValue }

    private static func identityStatusAndTitle(_ code: IdentityError.Code) -> (status: Int, title: String) {
        switch code {
        case .invalidInput: (400, "Invalid input")
        case .unauthenticated: (401, "Not signed in")
        case .invalidCredentials: (401, "Invalid credentials")
        case .tokenRejected: (401, "Token rejected")
        case .throttled: (429, "Too many requests")
        case .locked: (423, "Locked")
        case .forbidden: (403, "Forbidden")
        case .notFound: (404, "Not found")
        case .conflict: (409, "Conflict")
        case .storage, .storageUnavailable: (503, "Storage unavailable")
        case .purchasesNotConfigured: (501, "Purchases not configured")
        case .invalidSignedTransaction: (400, "Invalid signed transaction")
        case .appStoreAlgorithmNotES256, .appStoreSignatureInvalid, .appStoreUntrustedChain, .appStoreMarkerMissing, .appStoreCertificateExpired:
            (422, "App Store signature rejected")
        case .appStoreWrongBundle, .appStoreEnvironmentNotAllowed: (422, "Not this app's purchase")
        case .appAccountMismatch: (403, "Purchase made for another account")
        case .purchaseOwnedElsewhere: (409, "Purchase owned by another account")
        case .unknownProduct: (422, "Unknown product")
        case .notListable: (422, "Not listable")
        }
    }
}

/// An RFC 9457 problem: an HTTP status and a stable `code` a client can switch on.
///
/// `detail` is a fixed text or the reader's message about a field; it never echoes a submitted
/// secret (identity reasons are fixed strings by construction, and request errors name fields).
public struct Problem: Error, Sendable, Hashable {
    public var code: ProblemCode
    /// The code's status, except for `httpError`, which keeps the framework's.
    public var status: Int
    public var detail: String?
    /// The field at fault (`subject.auth.verifiedAt`, `refreshToken`), when one is.
    public var field: String?
    /// Seconds until a throttled client may try again (sent as `Retry-After` too).
    public var retryAfter: Int?
    /// For a body that is not a valid request: what the reader found (`duplicate_key`, `wrong_type`, ...)
    /// and the byte offset in the body where it found it.
    public var kind: String?
    public var offset: Int?
    /// The W3C trace id of the request (32 hex digits), when tracing is on (issue 39): an extension member a support
    /// ticket can quote to find the request's trace and log lines.
    public var traceId: String?

    /// A problem of `code`, answered with the code's status.
    public init(_ code: ProblemCode, detail: String? = nil, field: String? = nil, retryAfter: Int? = nil, offset: Int? = nil) {
        self.code = code
        self.status = code.status
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.offset = offset
    }

    public var title: String { code.title }

    /// The `application/problem+json` body.
    public var json: JSONText {
        var fields: [JSONText.Field] = [
            .init("type", .string(code.typeURI)), .init("title", .string(title)), .init("status", .int(status)),
            .init("code", .string(code.rawValue)),
        ]
        if let detail { fields.append(.init("detail", .string(detail))) }
        if let field, !field.isEmpty { fields.append(.init("field", .string(field))) }
        if let retryAfter { fields.append(.init("retryAfter", .int(retryAfter))) }
        if let kind { fields.append(.init("kind", .string(kind))) }
        if let offset { fields.append(.init("offset", .int(offset))) }
        if let traceId { fields.append(.init("traceId", .string(traceId))) }
        return .object(fields)
    }

    /// A request body that is not a valid request: `invalid_json` when it is not JSON (bad syntax or
    /// encoding, a duplicate key), `body_too_large` past the reader's size limit, else `invalid_request`
    /// naming the field; the reader's kind and byte offset go along.
    public init(_ error: RequestError) {
        // The reader's code (`invalid_json`, `body_too_large`, `invalid_request`) is one of the list.
        self.init(ProblemCode(rawValue: error.code) ?? .server(.invalidRequest), detail: error.message, field: error.field)
        kind = error.kind.rawValue
        offset = error.offset
    }

    /// An identity refusal, with the status of its code.
    public init(_ error: IdentityError) {
        self.init(.identity(error.code), detail: error.reason, field: error.field, retryAfter: error.retryAfter.map { Int($0.rounded(.up)) })
    }

    /// A request the decision pipeline refused (a subject named where it may not be).
    public init(_ error: DecisionRequestError) {
        let code: ProblemCode =
            switch error.kind {
            case .subjectWithBearer: .server(.subjectWithBearer)
            case .callerSubjectNotTrusted: .server(.callerSubjectNotTrusted)
            }
        self.init(code, detail: error.message, field: error.field)
    }

    /// A framework error (the router's 404 and 405, a body past its limit): its status, under the code that fits.
    public init(_ error: HTTPError) {
        let status = Int(error.status.code)
        let code: ProblemCode =
            switch status {
            case 404: .identity(.notFound)
            case 405: .server(.methodNotAllowed)
            case 413: .server(.bodyTooLarge)
            default: .server(.httpError)
            }
        self.init(code, detail: status == 404 ? "no such route" : nil)
        self.status = status
    }

    /// What any error a route throws becomes; an unexpected one is a 500 with no detail (it is logged).
    public static func from(_ error: any Error) -> Problem {
        switch error {
        case let p as Problem: p
        case let e as RequestError: Problem(e)
        case let e as IdentityError: Problem(e)
        case let e as DecisionRequestError: Problem(e)
        case let e as HTTPError: Problem(e)
        default: Problem(.server(.internal))
        }
    }

    public static func bodyTooLarge(limit: Int) -> Problem {
        Problem(.server(.bodyTooLarge), detail: "the body is larger than \(limit) bytes")
    }

    public static func throttled(retryAfter: TimeInterval, detail: String = "too many requests from this client") -> Problem {
        Problem(.identity(.throttled), detail: detail, retryAfter: max(1, Int(retryAfter.rounded(.up))))
    }

    public static let unsupportedMediaType = Problem(
        .server(.unsupportedMediaType), detail: "a request body must be JSON: Content-Type application/json (or leave Content-Type out)", field: "Content-Type")

    public static let malformedRequest = Problem(.server(.malformedRequest), detail: "the request is not valid HTTP/1.1 (its framing or Transfer-Encoding)")

    public static let missingBearer = Problem(
        .identity(.unauthenticated), detail: "this route needs Authorization: Bearer <access token>", field: "Authorization")

    public static let malformedAuthorization = Problem(
        .identity(.unauthenticated), detail: "the Authorization header must be 'Bearer <token>'", field: "Authorization")

    public static let operatorOnly = Problem(
        .server(.operatorCredentialRequired), detail: "this route needs Authorization: Bearer <operator token>", field: "Authorization")

    /// A request that did not finish within the server's request deadline (`--request-timeout`): nothing was
    /// allowed, and the client may try again after `Retry-After`.
    public static func requestDeadline(seconds: Double) -> Problem {
        Problem(.identity(.storageUnavailable), detail: "the request did not finish within \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s", retryAfter: 2)
    }

    /// `/readyz` when the database is not ready: why.
    public static func notReady(_ detail: String) -> Problem { Problem(.server(.notReady), detail: detail) }

    /// A path that answers other methods than the request's; `Allow` lists them.
    public static func methodNotAllowed(_ methods: [String]) -> Problem {
        Problem(.server(.methodNotAllowed), detail: "this path answers \(methods.joined(separator: ", "))")
    }

    /// A request not read whole within the read deadline (answered by the channel handler, not a route).
    public static func readTimeout(seconds: Double) -> Problem {
        Problem(.server(.readTimeout), detail: "the request was not read within \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s")
    }

    public static let notFound = Problem(.identity(.notFound), detail: "no such route")
}
