import Foundation

/// Reads typed fields out of a value tree, naming the field path in every error.
struct FieldReader {
    let value: Value
    let path: String

    init(_ value: Value, path: String) {
        self.value = value
        self.path = path
    }

    func join(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func object() throws(RequestError) -> [String: Value] {
        guard case .map(let m) = value else { throw RequestError(field: path, "expected an object, found \(value.kindName)") }
        return m
    }

    func string() throws(RequestError) -> String {
        guard case .string(let s) = value else { throw RequestError(field: path, "expected a string, found \(value.kindName)") }
        return s
    }

    func integer() throws(RequestError) -> Int {
        switch value {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9e15: return Int(d)
        default: throw RequestError(field: path, "expected an integer, found \(value.kindName)")
        }
    }

    func stringList() throws(RequestError) -> [String] {
        guard case .list(let items) = value else { throw RequestError(field: path, "expected a list of strings, found \(value.kindName)") }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            out.append(try FieldReader(item, path: "\(path)[\(i)]").string())
        }
        return out
    }

    func rejectUnknown(in object: [String: Value], allowed: Set<String>) throws(RequestError) {
        for key in object.keys.sorted() where !allowed.contains(key) {
            var message = "unknown field"
            if let match = Suggestion.closest(to: key, in: allowed.sorted()) { message += "; did you mean '\(match)'?" }
            throw RequestError(field: join(key), message, kind: .unknownField)
        }
    }

    func optionalString(_ o: [String: Value], _ key: String) throws(RequestError) -> String? {
        guard let v = o[key], v != .null else { return nil }
        return try FieldReader(v, path: join(key)).string()
    }

    func optionalTimestamp(_ o: [String: Value], _ key: String) throws(RequestError) -> Date? {
        guard let text = try optionalString(o, key) else { return nil }
        guard let date = Timestamp.parse(text) else {
            throw RequestError(field: join(key), "expected an RFC 3339 timestamp such as 2026-11-22T12:00:00Z, found '\(text)'", kind: .invalidTimestamp)
        }
        return date
    }

    func optionalMap(_ o: [String: Value], _ key: String) throws(RequestError) -> [String: Value] {
        guard let v = o[key], v != .null else { return [:] }
        return try FieldReader(v, path: join(key)).object()
    }
}
