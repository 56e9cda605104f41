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

extension Value: Decodable {
    /// Decodes any JSON value.
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

    /// Parses JSON text into a value tree with Foundation's `JSONDecoder`; a syntax error becomes a `RequestError`.
    ///
    /// Not how requests are read (`RequestReader` is): kept as the reference the hand-written reader is tested
    /// and measured against.
    public static func parseJSON(_ text: some StringProtocol) throws(RequestError) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(text.utf8))
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw RequestError(field: "", "invalid JSON" + (detail.map { ": \($0)" } ?? ""), kind: .syntax)
        } catch {
            throw RequestError(field: "", "invalid JSON", kind: .syntax)
        }
    }
}

/// Timestamps in requests and policies: RFC 3339, `2026-11-22T12:00:00Z`, with an optional fraction of 1 to 9
/// digits and a `Z` or `±HH:MM` offset.
public enum Timestamp {
    /// The instant an RFC 3339 timestamp names, or nil when `text` is not one.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// Parses RFC 3339 (section 5.6, `date-time`) by hand: upper-case `T` and `Z`, a real calendar date (no
    /// February 30) from 1583 on (before the Gregorian calendar, Foundation's calendar is Julian, so readers
    /// would disagree), hours 00-23, no leap second (`:60`), offsets up to ±23:59. Every text accepted is one
    /// Foundation's `ISO8601FormatStyle` accepts too, and reads as the same `Date` (tested).
    public static func parse(utf8 p: UnsafeBufferPointer<UInt8>) -> Date? {
        let n = p.count
        guard n >= 20, n <= 40 else { return nil }
        @inline(__always) func digits(_ at: Int, _ count: Int) -> Int? {
            var value = 0
            for i in at..<(at + count) {
                let d = Int(p[i]) &- 0x30
                guard d >= 0, d <= 9 else { return nil }
                value = value * 10 + d
            }
            return value
        }
        guard let year = digits(0, 4), p[4] == 0x2D, let month = digits(5, 2), p[7] == 0x2D, let day = digits(8, 2),
            p[10] == UInt8(ascii: "T"), let hour = digits(11, 2), p[13] == 0x3A, let minute = digits(14, 2), p[16] == 0x3A,
            let second = digits(17, 2)
        else { return nil }
        guard year >= 1583, month >= 1, month <= 12, day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 59
        else { return nil }
        var at = 19
        var fraction = 0.0
        if p[at] == UInt8(ascii: ".") {
            at += 1
            var value: UInt64 = 0
            var count = 0
            while at < n, p[at] >= 0x30, p[at] <= 0x39 {
                guard count < 9 else { return nil }
                value = value * 10 + UInt64(p[at] - 0x30)
                count += 1
                at += 1
            }
            guard count > 0 else { return nil }
            // Both operands are exact, so the quotient is the correctly rounded decimal fraction.
            fraction = Double(value) / powersOfTen[count]
        }
        guard at < n else { return nil }
        var offset = 0
        if p[at] == UInt8(ascii: "Z") {
            at += 1
        } else if p[at] == UInt8(ascii: "+") || p[at] == UInt8(ascii: "-") {
            guard n - at == 6, let h = digits(at + 1, 2), p[at + 3] == 0x3A, let m = digits(at + 4, 2), h <= 23, m <= 59 else { return nil }
            offset = (h * 60 + m) * 60
            if p[at] == UInt8(ascii: "-") { offset = -offset }
            at += 6
        } else {
            return nil
        }
        guard at == n else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSinceReferenceDate: Double(seconds - 978_307_200) + fraction)
    }

    private static let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The RFC 3339 form of `date` in UTC, with a fraction only when it has one.
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
        guard let actionValue = object["action"] else { throw RequestError(field: "action", "is required", kind: .missingField) }
        let action = try FieldReader(actionValue, path: "action").string()
        guard let resourceValue = object["resource"] else { throw RequestError(field: "resource", "is required", kind: .missingField) }
        let resource = try Resource(value: resourceValue, path: "resource")
        let context = try object["context"].map { v throws(RequestError) in try Context(value: v, path: "context") } ?? Context()
        self.init(subject: subject, action: action, resource: resource, context: context)
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
                throw RequestError(field: a.join("method"), "is required when auth is given", kind: .missingField)
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
        guard let type = try r.optionalString(o, "type") else { throw RequestError(field: r.join("type"), "is required", kind: .missingField) }
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
                let value = try FieldReader(count, path: u.join(counter)).integer()
                guard value >= 0 else {
                    throw RequestError(field: u.join(counter), "a usage count cannot be negative, found \(value)", kind: .negativeCount)
                }
                self.usage[counter] = value
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
