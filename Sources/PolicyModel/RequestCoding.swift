import Foundation

/// A request that could not be read, naming the field at fault (`subject.auth.verifiedAt`).
public struct RequestError: Error, Sendable, Hashable, CustomStringConvertible {
    public var field: String
    public var message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { field.isEmpty ? message : "\(field): \(message)" }
}

extension Value: Decodable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [Value] = []
            while !array.isAtEnd { items.append(try array.decode(Value.self)) }
            self = .list(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var map: [String: Value] = [:]
            for key in object.allKeys { map[key.stringValue] = try object.decode(Value.self, forKey: key) }
            self = .map(map)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? single.decode(Int.self) {
            self = .int(i)
        } else if let d = try? single.decode(Double.self) {
            self = .double(d)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Parses JSON text into a value tree; a syntax error becomes a `RequestError`.
    public static func parseJSON(_ text: some StringProtocol) throws(RequestError) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(text.utf8))
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw RequestError(field: "", "invalid JSON" + (detail.map { ": \($0)" } ?? ""))
        } catch {
            throw RequestError(field: "", "invalid JSON")
        }
    }
}

/// Timestamps in requests and policies: RFC 3339 / ISO 8601, with or without fractional seconds.
public enum Timestamp {
    public static func parse(_ text: String) -> Date? {
        guard text.count >= 20, text.count <= 40 else { return nil }
        // Foundation's parser stops at the end of a valid prefix; anything after it (found by
        // schemathesis: "2077-12-02T20:37:56.714-02:38*") must not be taken for a timestamp.
        guard text.utf8.allSatisfy({ (0x30...0x3A).contains($0) || $0 == 0x2D || $0 == 0x2E || $0 == 0x2B || $0 == 0x54 || $0 == 0x5A }),
            text.last == "Z" || text.last?.isNumber == true
        else { return nil }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false)) {
            return date
        }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    public static func format(_ date: Date) -> String {
        let whole = date.timeIntervalSince1970.rounded(.down)
        if whole == date.timeIntervalSince1970 {
            return date.formatted(Date.ISO8601FormatStyle())
        }
        return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension Request {
    /// Reads a request from its JSON value tree, rejecting unknown fields and wrong types by name.
    public init(value: Value) throws(RequestError) {
        let r = FieldReader(value, path: "")
        let object = try r.object()
        try r.rejectUnknown(in: object, allowed: ["subject", "action", "resource", "context"])
        let subject = try object["subject"].map { v throws(RequestError) in try Subject(value: v, path: "subject") } ?? Subject()
        guard let actionValue = object["action"] else { throw RequestError(field: "action", "is required") }
        let action = try FieldReader(actionValue, path: "action").string()
        guard let resourceValue = object["resource"] else { throw RequestError(field: "resource", "is required") }
        let resource = try Resource(value: resourceValue, path: "resource")
        let context = try object["context"].map { v throws(RequestError) in try Context(value: v, path: "context") } ?? Context()
        self.init(subject: subject, action: action, resource: resource, context: context)
    }

    /// Reads a request from JSON text.
    public init(json: some StringProtocol) throws(RequestError) {
        try self.init(value: Value.parseJSON(json))
    }

    /// The contract's JSON form of this request.
    public var json: JSONText {
        var fields: [JSONText.Field] = []
        var s: [JSONText.Field] = []
        if let id = subject.id { s.append(.init("id", .string(id))) }
        if let tier = subject.tier { s.append(.init("tier", .string(tier))) }
        if let e = subject.subscriptionExpiry { s.append(.init("subscriptionExpiry", .string(Timestamp.format(e)))) }
        if !subject.roles.isEmpty { s.append(.init("roles", .array(subject.roles.map { .string($0) }))) }
        if let auth = subject.auth {
            var a: [JSONText.Field] = [.init("method", .string(auth.method))]
            if let at = auth.verifiedAt { a.append(.init("verifiedAt", .string(Timestamp.format(at)))) }
            s.append(.init("auth", .object(a)))
        }
        if !subject.attributes.isEmpty { s.append(.init("attributes", JSONText(.map(subject.attributes)))) }
        fields.append(.init("subject", .object(s)))
        fields.append(.init("action", .string(action)))
        var r: [JSONText.Field] = [.init("type", .string(resource.type))]
        if let id = resource.id { r.append(.init("id", .string(id))) }
        if let owner = resource.ownerId { r.append(.init("ownerId", .string(owner))) }
        if !resource.members.isEmpty {
            r.append(.init("members", .object(resource.members.keys.sorted().map { .init($0, .string(resource.members[$0]!)) })))
        }
        if !resource.usage.isEmpty {
            r.append(.init("usage", .object(resource.usage.keys.sorted().map { .init($0, .int(resource.usage[$0]!)) })))
        }
        if !resource.attributes.isEmpty { r.append(.init("attributes", JSONText(.map(resource.attributes)))) }
        fields.append(.init("resource", .object(r)))
        var c: [JSONText.Field] = []
        if let now = context.now { c.append(.init("now", .string(Timestamp.format(now)))) }
        if !context.attributes.isEmpty { c.append(.init("attributes", JSONText(.map(context.attributes)))) }
        if !c.isEmpty { fields.append(.init("context", .object(c))) }
        return .object(fields)
    }
}

extension Subject {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["id", "tier", "subscriptionExpiry", "roles", "auth", "attributes"])
        self.init()
        id = try r.optionalString(o, "id")
        tier = try r.optionalString(o, "tier")
        subscriptionExpiry = try r.optionalTimestamp(o, "subscriptionExpiry")
        if let roles = o["roles"], roles != .null {
            self.roles = try FieldReader(roles, path: r.join("roles")).stringList()
        }
        if let auth = o["auth"], auth != .null {
            let a = FieldReader(auth, path: r.join("auth"))
            let ao = try a.object()
            try a.rejectUnknown(in: ao, allowed: ["method", "verifiedAt"])
            guard let method = try a.optionalString(ao, "method") else {
                throw RequestError(field: a.join("method"), "is required when auth is given")
            }
            self.auth = Authentication(method: method, verifiedAt: try a.optionalTimestamp(ao, "verifiedAt"))
        }
        attributes = try r.optionalMap(o, "attributes")
    }
}

extension Resource {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["type", "id", "ownerId", "members", "usage", "attributes"])
        guard let type = try r.optionalString(o, "type") else { throw RequestError(field: r.join("type"), "is required") }
        self.init(type: type)
        id = try r.optionalString(o, "id")
        ownerId = try r.optionalString(o, "ownerId")
        if let members = o["members"], members != .null {
            let m = FieldReader(members, path: r.join("members"))
            for (user, role) in try m.object() {
                self.members[user] = try FieldReader(role, path: m.join(user)).string()
            }
        }
        if let usage = o["usage"], usage != .null {
            let u = FieldReader(usage, path: r.join("usage"))
            for (counter, count) in try u.object() {
                self.usage[counter] = try FieldReader(count, path: u.join(counter)).integer()
            }
        }
        attributes = try r.optionalMap(o, "attributes")
    }
}

extension Context {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["now", "attributes"])
        self.init(now: try r.optionalTimestamp(o, "now"), attributes: try r.optionalMap(o, "attributes"))
    }
}

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
            throw RequestError(field: join(key), message)
        }
    }

    func optionalString(_ o: [String: Value], _ key: String) throws(RequestError) -> String? {
        guard let v = o[key], v != .null else { return nil }
        return try FieldReader(v, path: join(key)).string()
    }

    func optionalTimestamp(_ o: [String: Value], _ key: String) throws(RequestError) -> Date? {
        guard let text = try optionalString(o, key) else { return nil }
        guard let date = Timestamp.parse(text) else {
            throw RequestError(field: join(key), "expected an RFC 3339 timestamp such as 2026-11-22T12:00:00Z, found '\(text)'")
        }
        return date
    }

    func optionalMap(_ o: [String: Value], _ key: String) throws(RequestError) -> [String: Value] {
        guard let v = o[key], v != .null else { return [:] }
        return try FieldReader(v, path: join(key)).object()
    }
}
