import Foundation

/// A request that could not be read, naming the field at fault (`subject.auth.verifiedAt`) and, when read from
/// JSON, the byte offset where the fault was found.
public struct RequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for code that reacts to some faults differently (an HTTP 413 for `tooLarge`).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Not JSON at all: a stray byte, an unterminated string or object, text after the request.
        case syntax
        /// A key given twice in one object.
        case duplicateKey = "duplicate_key"
        /// Bytes that are not UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// A `\u` escape of half a surrogate pair.
        case unpairedSurrogate = "unpaired_surrogate"
        /// An integer that does not fit `Int`.
        case integerOverflow = "integer_overflow"
        /// A number with a fraction or exponent too large for a `Double`.
        case numberOutOfRange = "number_out_of_range"
        /// A usage counter below zero.
        case negativeCount = "negative_count"
        /// Nesting deeper than `RequestLimits.maxDepth`.
        case tooDeep = "too_deep"
        /// Input longer than `RequestLimits.maxBytes`.
        case tooLarge = "too_large"
        /// A field the contract does not define, outside `attributes`.
        case unknownField = "unknown_field"
        /// A value of the wrong JSON type for its field.
        case wrongType = "wrong_type"
        /// A required field (`action`, `resource.type`) is absent.
        case missingField = "missing_field"
        /// A string that is not an RFC 3339 timestamp where one is needed.
        case invalidTimestamp = "invalid_timestamp"
        /// A value of the right type that an envelope refuses: an empty or repeated action list, too many items.
        case invalidValue = "invalid_value"
    }

    /// What kind of fault it is.
    public var kind: Kind
    /// The field path, `resource.usage.sources` or `subject.roles[1]`; empty for the request as a whole.
    public var field: String
    /// What is wrong with the field.
    public var message: String
    /// Where in the input (bytes from its start, 0-based) the fault was found; nil when not read from JSON text.
    public var offset: Int?

    /// An error at `field`.
    public init(field: String, _ message: String, kind: Kind = .wrongType, offset: Int? = nil) {
        self.kind = kind
        self.field = field
        self.message = message
        self.offset = offset
    }

    /// The problem code an answer carries for this fault, the same over HTTP and in `policy decide --jsonl`:
    /// `invalid_json` when the input is not JSON (bad syntax or encoding, a duplicate key, too deep),
    /// `body_too_large` past the size limit, else `invalid_request` naming the field.
    public var code: String {
        switch kind {
        case .syntax, .invalidUTF8, .unpairedSurrogate, .duplicateKey, .tooDeep: "invalid_json"
        case .tooLarge: "body_too_large"
        default: "invalid_request"
        }
    }

    /// `field: message (at byte N)`.
    public var description: String {
        var text = field.isEmpty ? message : "\(field): \(message)"
        if let offset { text += " (at byte \(offset))" }
        return text
    }
}
