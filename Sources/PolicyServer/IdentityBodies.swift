import Foundation
import Gatehouse
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

/// `{"counter", "by"}` of the usage routes; `by` defaults to 1 and may be negative (a source removed).
func usageChange(_ body: IdentityBody) throws(RequestError) -> (String, Int) {
    let counter = try body.string("counter")
    switch body.values["by"] {
    case nil: return (counter, 1)
    case .int(let by)?: return (counter, by)
    default: throw RequestError(field: "by", "must be an integer")
    }
}

func privacyJSON(_ p: PrivacySettings) -> JSONText {
    .object([
        .init("analytics", .bool(p.analytics)), .init("crashReporting", .bool(p.crashReporting)),
        .init("aiSuggestions", .bool(p.aiSuggestions)), .init("dataSharing", .string(p.dataSharing.rawValue)),
    ])
}

/// `GET /v1/me`: the account as its owner sees it; absent facts are `null`, never left out.
func profileJSON(_ p: AccountProfile) -> JSONText {
    func optional(_ text: String?) -> JSONText { text.map { .string($0) } ?? .null }
    return .object([
        .init("userId", .string(p.userId)), .init("username", optional(p.username)), .init("displayName", optional(p.displayName)),
        .init("email", optional(p.email)), .init("isPrivateRelayEmail", .bool(p.isPrivateRelayEmail)),
        .init("appleUserIds", .array(p.appleUserIds.map { .string($0) })), .init("hasPIN", .bool(p.hasPIN)),
        .init("deviceIds", .array(p.deviceIds.map { .string($0) })), .init("appRoles", .array(p.appRoles.map { .string($0) })),
        .init("tier", optional(p.tier)), .init("subscriptionExpiresAt", optional(p.subscriptionExpiresAt.map(Timestamp.format))),
        .init("appAccountToken", .string(p.appAccountToken)),
    ])
}
