import Foundation
import Identity
import PolicyModel

/// An RFC 9457 problem: an HTTP status and a stable `code` a client can switch on.
///
/// `detail` is a fixed text or the reader's message about a field; it never echoes a submitted
/// secret (identity reasons are fixed strings by construction, and request errors name fields).
public struct Problem: Error, Sendable, Hashable {
    public var status: Int
    public var code: String
    public var title: String
    public var detail: String?
    /// The field at fault (`subject.auth.verifiedAt`, `refreshToken`), when one is.
    public var field: String?
    /// Seconds until a throttled client may try again (sent as `Retry-After` too).
    public var retryAfter: Int?
    /// For a body that is not a valid request: what the reader found (`duplicate_key`, `wrong_type`, ...)
    /// and the byte offset in the body where it found it.
    public var kind: String?
    public var offset: Int?

    public init(
        status: Int, code: String, title: String, detail: String? = nil, field: String? = nil, retryAfter: Int? = nil,
        offset: Int? = nil
    ) {
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.offset = offset
    }

    /// The RFC 9457 `type` of a problem code: one URI per code, `urn:gatehouse:problem:<code>` (a name, not a page
    /// to fetch: RFC 9457 allows that, and a client keys on it or on `code`). docs/server.md lists the codes.
    public static func typeURI(_ code: String) -> String { "urn:gatehouse:problem:" + code }

    /// The `application/problem+json` body.
    public var json: JSONText {
        var fields: [JSONText.Field] = [
            .init("type", .string(Self.typeURI(code))), .init("title", .string(title)), .init("status", .int(status)),
            .init("code", .string(code)),
        ]
        if let detail { fields.append(.init("detail", .string(detail))) }
        if let field, !field.isEmpty { fields.append(.init("field", .string(field))) }
        if let retryAfter { fields.append(.init("retryAfter", .int(retryAfter))) }
        if let kind { fields.append(.init("kind", .string(kind))) }
        if let offset { fields.append(.init("offset", .int(offset))) }
        return .object(fields)
    }

    /// A request body that is not a valid request: `invalid_json` when it is not JSON (bad syntax or
    /// encoding, a duplicate key), `body_too_large` past the reader's size limit, else `invalid_request`
    /// naming the field; the reader's kind and byte offset go along.
    public init(_ error: RequestError) {
        let status = error.kind == .tooLarge ? 413 : 400
        let code = error.code
        self.init(status: status, code: code, title: status == 413 ? "Body too large" : "Invalid request", detail: error.message, field: error.field)
        kind = error.kind.rawValue
        offset = error.offset
    }

    /// An identity refusal, with the status that fits its code.
    public init(_ error: IdentityError) {
        let status: Int
        let title: String
        switch error.code {
        case .invalidInput: (status, title) = (400, "Invalid input")
        case .unauthenticated: (status, title) = (401, "Not signed in")
        case .invalidCredentials: (status, title) = (401, "Invalid credentials")
        case .tokenRejected: (status, title) = (401, "Token rejected")
        case .throttled: (status, title) = (429, "Too many attempts")
        case .locked: (status, title) = (423, "Locked")
        case .forbidden: (status, title) = (403, "Forbidden")
        case .notFound: (status, title) = (404, "Not found")
        case .conflict: (status, title) = (409, "Conflict")
        case .storage: (status, title) = (503, "Storage unavailable")
        case .purchasesNotConfigured: (status, title) = (501, "Purchases not configured")
        case .invalidSignedTransaction: (status, title) = (400, "Invalid signed transaction")
        case .appStoreAlgorithm, .appStoreSignature, .appStoreUntrustedChain, .appStoreMarkerMissing, .appStoreCertificateExpired:
            (status, title) = (422, "App Store signature rejected")
        case .appStoreWrongBundle, .appStoreEnvironment: (status, title) = (422, "Not this app's purchase")
        case .appAccountMismatch: (status, title) = (403, "Purchase made for another account")
        case .purchaseOwnedElsewhere: (status, title) = (409, "Purchase owned by another account")
        case .unknownProduct: (status, title) = (422, "Unknown product")
        case .storageUnavailable: (status, title) = (503, "Storage unavailable")
        }
        self.init(
            status: status, code: error.code.rawValue, title: title, detail: error.reason, field: error.field,
            retryAfter: error.retryAfter.map { Int($0.rounded(.up)) })
    }

    /// What any error a route throws becomes; an unexpected one is a 500 with no detail (it is logged).
    public static func from(_ error: any Error) -> Problem {
        switch error {
        case let p as Problem: p
        case let e as RequestError: Problem(e)
        case let e as IdentityError: Problem(e)
        default: Problem(status: 500, code: "internal", title: "Internal error")
        }
    }

    public static func bodyTooLarge(limit: Int) -> Problem {
        Problem(status: 413, code: "body_too_large", title: "Body too large", detail: "the body is larger than \(limit) bytes")
    }

    public static func throttled(retryAfter: TimeInterval, detail: String = "too many requests from this client") -> Problem {
        Problem(status: 429, code: "throttled", title: "Too many requests", detail: detail, retryAfter: max(1, Int(retryAfter.rounded(.up))))
    }

    public static let unsupportedMediaType = Problem(
        status: 415, code: "unsupported_media_type", title: "Unsupported Media Type",
        detail: "a request body must be JSON: Content-Type application/json (or leave Content-Type out)", field: "Content-Type")

    public static let malformedRequest = Problem(
        status: 400, code: "malformed_request", title: "Bad Request", detail: "the request is not valid HTTP/1.1 (its framing or Transfer-Encoding)")

    public static let missingBearer = Problem(
        status: 401, code: "unauthenticated", title: "Not signed in", detail: "this route needs Authorization: Bearer <access token>",
        field: "Authorization")

    public static let malformedAuthorization = Problem(
        status: 401, code: "unauthenticated", title: "Not signed in", detail: "the Authorization header must be 'Bearer <token>'",
        field: "Authorization")

    public static let operatorOnly = Problem(
        status: 401, code: "operator_credential_required", title: "Operator credential required",
        detail: "this route needs Authorization: Bearer <operator token>", field: "Authorization")

    public static let subjectWithBearer = Problem(
        status: 400, code: "subject_with_bearer", title: "Subject and bearer token both given",
        detail: "with Authorization: Bearer the server builds the subject; leave 'subject' out", field: "subject")

    public static let callerSubjectNotTrusted = Problem(
        status: 403, code: "caller_subject_not_trusted", title: "Caller-asserted subject not trusted",
        detail: "this server decides only for the holder of Authorization: Bearer <access token>; a backend that names the subject itself needs the server started with --trust-caller-subjects (GATEHOUSE_TRUST_CALLER_SUBJECTS=1)",
        field: "subject")
    /// A request that did not finish within the server's request deadline (`--request-timeout`): nothing was
    /// allowed, and the client may try again after `Retry-After`.
    public static func requestDeadline(seconds: Double) -> Problem {
        Problem(
            status: 503, code: IdentityError.Code.storageUnavailable.rawValue, title: "Storage unavailable",
            detail: "the request did not finish within \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s", retryAfter: 2)
    }

    public static let notFound = Problem(status: 404, code: "not_found", title: "Not found", detail: "no such route")
}
