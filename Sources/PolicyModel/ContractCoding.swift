import Foundation

// `Codable` forms of the contract's values (docs/decision-contract.md) that the server and an app exchange, so both
// sides hold one set of types: a request encodes as `Request.json` writes it and decodes through the contract's strict
// reader (`Request(value:)`), a decision encodes as `DecisionWriter` writes it, and `JSONText`/`Value` carry the
// free-form attributes. `ProblemDetails` and `TokenPair` are the server's problem+json and token bodies.

extension JSONText: Encodable {
    /// Encodes the text's value, object fields in their order.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null, .bool, .int, .double, .string:
            var c = encoder.singleValueContainer()
            switch self {
            case .bool(let b): try c.encode(b)
            case .int(let i): try c.encode(i)
            case .double(let d): try c.encode(d)
            case .string(let s): try c.encode(s)
            default: try c.encodeNil()
            }
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case .object(let fields):
            var c = encoder.container(keyedBy: ContractKey.self)
            for field in fields { try c.encode(field.value, forKey: ContractKey(field.key)) }
        }
    }
}

extension Value: Encodable {
    /// Encodes the value as JSON (a map's keys sorted).
    public func encode(to encoder: any Encoder) throws {
        try JSONText(self).encode(to: encoder)
    }
}

extension Request: Codable {
    /// The contract's JSON of this request, exactly `json`'s fields.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// Reads a request with the contract's rules (`Request(value:)`): unknown fields and wrong types refused by name.
    public init(from decoder: any Decoder) throws {
        let value = try Value(from: decoder)
        do {
            try self.init(value: value)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }
}

extension Decision: Encodable {
    /// The contract's decision object, as `DecisionWriter` writes it: fields in contract order, absent ones left out.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

/// An RFC 9457 problem as `policy serve` writes it (`application/problem+json`): a status and a stable `code` to
/// switch on, the field at fault, and for a throttled client the seconds to wait.
public struct ProblemDetails: Codable, Sendable, Hashable, Error {
    /// `urn:gatehouse:problem:<code>`.
    public var type: String
    /// A short, fixed summary of the problem's kind.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// The stable code (`invalid_request`, `unauthenticated`, `throttled`, ...); docs/server.md lists them.
    public var code: String
    /// What went wrong, in a sentence; never a submitted secret.
    public var detail: String?
    /// The field at fault (`refreshToken`, `subject.auth.verifiedAt`), when one is.
    public var field: String?
    /// Seconds until a throttled client may try again.
    public var retryAfter: Int?
    /// For a body the request reader refused: what it found (`wrong_type`, `unknown_field`, ...).
    public var kind: String?
    /// For a body the request reader refused: the byte offset of the fault.
    public var offset: Int?

    /// A problem; `type` follows from `code`.
    public init(
        status: Int, code: String, title: String, detail: String? = nil, field: String? = nil, retryAfter: Int? = nil,
        kind: String? = nil, offset: Int? = nil
    ) {
        self.type = "urn:gatehouse:problem:" + code
        self.title = title
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.kind = kind
        self.offset = offset
    }
}

/// The tokens a sign-in or refresh returns: a short-lived access token, the refresh token that renews it, and the user.
///
/// Secrets: `description`, `debugDescription` and the mirror (`dump`, string interpolation) show neither token.
public struct TokenPair: Codable, Sendable, Hashable, SecretRedacting {
    /// The bearer for API calls (`gha_...`).
    public var accessToken: String
    /// When the server stops accepting `accessToken`.
    public var accessExpiresAt: Date
    /// Exchanged once for a new pair (`POST /v1/auth/refresh`); reuse outside the grace window ends the session.
    public var refreshToken: String
    /// The account the session belongs to.
    public var userId: String

    /// A pair.
    public init(accessToken: String, accessExpiresAt: Date, refreshToken: String, userId: String) {
        self.accessToken = accessToken
        self.accessExpiresAt = accessExpiresAt
        self.refreshToken = refreshToken
        self.userId = userId
    }

    enum CodingKeys: String, CodingKey {
        case accessToken, accessExpiresAt, refreshToken, userId
    }

    /// The server's JSON: `accessExpiresAt` is an RFC 3339 timestamp.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try c.decode(String.self, forKey: .accessToken)
        refreshToken = try c.decode(String.self, forKey: .refreshToken)
        userId = try c.decode(String.self, forKey: .userId)
        let text = try c.decode(String.self, forKey: .accessExpiresAt)
        guard let date = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: .accessExpiresAt, in: c, debugDescription: "must be an RFC 3339 timestamp")
        }
        accessExpiresAt = date
    }

    /// The server's JSON, the fields in the server's order.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(accessToken, forKey: .accessToken)
        try c.encode(Timestamp.format(accessExpiresAt), forKey: .accessExpiresAt)
        try c.encode(refreshToken, forKey: .refreshToken)
        try c.encode(userId, forKey: .userId)
    }

    /// The user and the expiry; the tokens redacted.
    public var shownFields: KeyValuePairs<String, Any> {
        ["userId": userId, "accessExpiresAt": Timestamp.format(accessExpiresAt), "tokens": Self.redacted]
    }
}

/// A JSON object key of any name.
struct ContractKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
