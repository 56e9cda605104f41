import Foundation
import PolicyModel

/// The small JSON bodies of the identity routes: one object, unknown keys refused, each field typed.
public struct IdentityBody: Sendable {
    public let values: [String: Value]

    /// Reads `text` as an object whose keys are among `required` and `optional`, every `required` one present.
    public init(_ text: String, required: Set<String> = [], optional: Set<String> = []) throws(RequestError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !(trimmed.isEmpty && required.isEmpty) else {
            values = [:]
            return
        }
        guard case .map(let object) = try Value.parseJSON(trimmed) else { throw RequestError(field: "", "the body must be a JSON object") }
        for key in object.keys.sorted() where !required.contains(key) && !optional.contains(key) {
            throw RequestError(field: key, "is not a known field (expected: \(required.union(optional).sorted().joined(separator: ", ")))")
        }
        for key in required.sorted() where object[key] == nil { throw RequestError(field: key, "is required") }
        values = object
    }

    public func string(_ key: String) throws(RequestError) -> String {
        guard let value = try optionalString(key) else { throw RequestError(field: key, "is required") }
        return value
    }

    public func optionalString(_ key: String) throws(RequestError) -> String? {
        switch values[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw RequestError(field: key, "must be a string")
        }
    }

    public func optionalBool(_ key: String) throws(RequestError) -> Bool? {
        switch values[key] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        default: throw RequestError(field: key, "must be true or false")
        }
    }

    public func strings(_ key: String) throws(RequestError) -> [String] {
        guard case .list(let items)? = values[key] else { throw RequestError(field: key, "must be an array of strings") }
        return try items.enumerated().map { i, item throws(RequestError) in
            guard case .string(let s) = item else { throw RequestError(field: "\(key)[\(i)]", "must be a string") }
            return s
        }
    }

    /// Base64 (standard or URL alphabet, padding optional) bytes.
    public func bytes(_ key: String) throws(RequestError) -> Data {
        let text = try string(key)
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64) else { throw RequestError(field: key, "must be base64") }
        return data
    }

    public func optionalDate(_ key: String) throws(RequestError) -> Date? {
        guard let text = try optionalString(key) else { return nil }
        guard let date = Timestamp.parse(text) else { throw RequestError(field: key, "must be an RFC 3339 timestamp") }
        return date
    }
}
