import Foundation

/// What `Request(json:)` and `RequestReader` accept at most.
public struct RequestLimits: Sendable, Hashable {
    /// The largest input read, in bytes: one line of `policy decide --jsonl`, one HTTP body.
    public var maxBytes: Int
    /// The deepest nesting of objects and arrays, the request object itself counting as 1 (the contract's own
    /// fields need 3; deeper levels are free-form `attributes`).
    public var maxDepth: Int

    /// Limits of `maxBytes` bytes and `maxDepth` levels.
    public init(maxBytes: Int = 1 << 20, maxDepth: Int = 32) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
    }

    /// 1 MiB, 32 levels.
    public static let standard = RequestLimits()
}

/// Reads the contract's request JSON straight into a `Request`, in one pass over the bytes.
///
/// Strict where two readers could disagree: a key given twice at any depth, invalid UTF-8, an unpaired
/// surrogate escape, an integer that overflows `Int`, a negative usage counter, nesting past
/// `limits.maxDepth` and input past `limits.maxBytes` are refused, as are unknown fields of the contract's
/// objects (`attributes` are free-form). Every error names the field (`resource.usage.sources`) and the byte
/// offset. Written by hand (no `JSONDecoder`, no value tree except for `attributes`): see docs/performance.md.
public struct RequestReader: Sendable {
    /// The most it reads.
    public var limits: RequestLimits

    /// A reader within `limits`.
    public init(limits: RequestLimits = .standard) {
        self.limits = limits
    }

    /// Reads one request from `bytes` into `request`, reusing the storage of its arrays and dictionaries, so a
    /// loop that reads many requests into one value allocates only for what a request adds. On a throw,
    /// `request` holds a mix of what was read so far and what it held before.
    public func read(_ bytes: UnsafeRawBufferPointer, into request: inout Request) throws(RequestError) {
        if bytes.count <= limits.maxBytes { request.reset() }
        try parseContiguous(bytes) { (parser: inout JSONRequestParser) throws(RequestError) in try parser.readRequest(into: &request) }
    }

    /// Reads one request from `bytes`.
    public func read(_ bytes: UnsafeRawBufferPointer) throws(RequestError) -> Request {
        var request = Request(action: "", resource: Resource(type: ""))
        try read(bytes, into: &request)
        return request
    }

    /// Reads one request from any contiguous or non-contiguous bytes (`[UInt8]`, `Data`, a slice of a buffer).
    public func read(_ bytes: some Collection<UInt8>) throws(RequestError) -> Request {
        try parse(bytes) { (parser: inout JSONRequestParser) throws(RequestError) in
            var request = Request(action: "", resource: Resource(type: ""))
            try parser.readRequest(into: &request)
            return request
        }
    }

    /// Runs `body` over a parser of `bytes` (copied only when they are not contiguous): a request, or an envelope
    /// of requests (`readBatch`, `readCheck`).
    func parse<T>(_ bytes: some Collection<UInt8>, _ body: (inout JSONRequestParser) throws(RequestError) -> T) throws(RequestError) -> T {
        let result: Result<T, RequestError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(RequestError) in try parseContiguous(UnsafeRawBufferPointer(buffer), body) }
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBytes { buffer in
            Result { () throws(RequestError) in try parseContiguous(buffer, body) }
        }.get()
    }

    /// Runs `body` over a parser of `bytes`, after refusing input past `limits.maxBytes` and empty input.
    ///
    /// Throws, rather than returning a `Result` (as it did): the result and its error, ~100 bytes, were copied out
    /// and unwrapped on every line of the JSON edge (~60 instructions a line, issue 41, seventh round).
    func parseContiguous<T>(_ bytes: UnsafeRawBufferPointer, _ body: (inout JSONRequestParser) throws(RequestError) -> T)
        throws(RequestError) -> T
    {
        guard bytes.count <= limits.maxBytes else {
            throw RequestError(
                field: "", "request is \(bytes.count) bytes, more than the limit of \(limits.maxBytes)", kind: .tooLarge,
                offset: limits.maxBytes)
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw RequestError(field: "", "invalid JSON: the input is empty", kind: .syntax, offset: 0)
        }
        var parser = JSONRequestParser(base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: limits.maxDepth)
        return try body(&parser)
    }
}

extension Request {
    /// Reads a request from JSON text (see `RequestReader` for what is refused).
    public init(json: some StringProtocol, limits: RequestLimits = .standard) throws(RequestError) {
        var text = String(json)
        let result: Result<Request, RequestError> = text.withUTF8 { buffer in
            do throws(RequestError) { return .success(try RequestReader(limits: limits).read(UnsafeRawBufferPointer(buffer))) } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Reads a request from JSON bytes, such as an HTTP body (see `RequestReader` for what is refused).
    public init(json: some Collection<UInt8>, limits: RequestLimits = .standard) throws(RequestError) {
        self = try RequestReader(limits: limits).read(json)
    }

    /// Empties the collections and dates, keeping the storage of arrays and dictionaries (an empty one is not
    /// touched). The strings (`subject.id`, `tier`, `auth`, `action`, `resource.type`, `id`, `ownerId`) are left:
    /// reading a request object writes each one or, where its key is absent, clears it (`clearUnseen`), so a
    /// string is released once per line, not twice (~120 instructions a line of the JSON edge, issue 41).
    mutating func reset() {
        subject.subscriptionExpiry = nil
        if !subject.roles.isEmpty { subject.roles.removeAll(keepingCapacity: true) }
        if !subject.attributes.isEmpty { subject.attributes.removeAll(keepingCapacity: true) }
        if !resource.members.isEmpty { resource.members.removeAll(keepingCapacity: true) }
        if !resource.usage.isEmpty { resource.usage.removeAll(keepingCapacity: true) }
        if !resource.attributes.isEmpty { resource.attributes.removeAll(keepingCapacity: true) }
        context.now = nil
        if !context.attributes.isEmpty { context.attributes.removeAll(keepingCapacity: true) }
    }
}

extension RequestError {
    /// The same error one level further out: `members.u1` inside `resource` becomes `resource.members.u1`.
    func inside(_ name: String) -> RequestError {
        var copy = self
        if copy.field.isEmpty {
            copy.field = name
        } else if copy.field.utf8.first == UInt8(ascii: "[") {
            copy.field = name + copy.field
        } else {
            copy.field = name + "." + copy.field
        }
        return copy
    }
}

/// Word-at-a-time scans of JSON string bytes.
enum JSONBytes {
    /// The first index from `from` whose byte is `"`, `\\` or a control character (or, with `stopAtNonASCII`,
    /// at least 0x80), or a later index (at most `count`) from which the caller must look byte by byte.
    @inline(__always)
    static func skipPlain(_ base: UnsafePointer<UInt8>, from: Int, count: Int, stopAtNonASCII: Bool) -> Int {
        var pos = from
        #if _endian(little)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while pos + 8 <= count {
            let w = UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self)
            let quote = w ^ (ones &* 0x22)
            let backslash = w ^ (ones &* 0x5C)
            // A byte's high bit is set in each term where that byte is zero (or below 0x20 for the last); borrows
            // can only mark bytes above the first true match, which is the lowest marked byte.
            var special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((w &- ones &* 0x20) & ~w)
            special &= highs
            if stopAtNonASCII { special |= w & highs }
            if special != 0 { return pos + special.trailingZeroBitCount / 8 }
            pos += 8
        }
        #endif
        return pos
    }

    /// `skipPlain` (`stopAtNonASCII`), then the last fewer-than-eight bytes before `count` as one word too: the
    /// word that ends at `count`, loaded over bytes already scanned, which are masked off. The tail test is exact
    /// per byte (no borrow crosses from one byte into the next), so a byte below `from` (the opening quote) cannot
    /// mark one above it.
    @inline(__always)
    static func skipPlainToEnd(_ base: UnsafePointer<UInt8>, from: Int, count: Int) -> Int {
        let pos = skipPlain(base, from: from, count: count, stopAtNonASCII: true)
        #if _endian(little)
        guard pos < count, pos + 8 > count, count >= 8 else { return pos }
        let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let highs: UInt64 = 0x8080_8080_8080_8080
        let ones: UInt64 = 0x0101_0101_0101_0101
        let w = UnsafeRawPointer(base + count - 8).loadUnaligned(as: UInt64.self)
        // A byte's high bit is clear in `plain` exactly where the byte is `"`, `\\`, below 0x20, or not ASCII.
        let quote = w ^ (ones &* 0x22)
        let backslash = w ^ (ones &* 0x5C)
        let plain = (((quote & lows) &+ lows) | quote) & (((backslash & lows) &+ lows) | backslash) & ((w & lows) &+ (ones &* 0x60)) & ~w
        // Bytes count-8 ..< pos are scanned already or precede the string: the low `pos - (count - 8)` bytes (1 to 7).
        let special = ~plain & highs & ~((1 &<< UInt64((pos - (count - 8)) &* 8)) &- 1)
        return special != 0 ? count - 8 + special.trailingZeroBitCount / 8 : count
        #else
        return pos
        #endif
    }
}

/// A string token: where its bytes are, between the quotes, and whether it holds escapes to decode.
struct StringToken {
    var start: Int
    var end: Int
    var escaped: Bool
    /// Where the opening quote is, for errors.
    var offset: Int
    /// Whether every byte between the quotes is ASCII (no escapes, no multi-byte sequences).
    var ascii: Bool
}

/// The parser behind `RequestReader`: a cursor over the input, reading the contract's fields by name.
struct JSONRequestParser {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var pos = 0
    /// Decoded bytes of the last escaped string (allocated only when a string has escapes).
    var scratch: [UInt8] = []

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
    }

    // MARK: The contract's objects

    mutating func readRequest(into request: inout Request) throws(RequestError) {
        skipByteOrderMark()
        skipWhitespace()
        try readRequestObject(into: &request)
        skipWhitespace()
        guard pos == count else { throw syntax("unexpected \(describeByte()) after the request") }
    }

    /// A UTF-8 byte order mark at the start is skipped, as Foundation does.
    mutating func skipByteOrderMark() {
        if pos == 0, count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { pos = 3 }
    }

    /// One request object at the cursor (a whole body, or an item of a batch), the cursor left after its `}`.
    mutating func readRequestObject(into request: inout Request) throws(RequestError) {
        var none: [String] = []
        try readRequestObject(into: &request, actions: &none, maxActions: nil)
    }

    /// A request object, or with `maxActions` a check's (`actions`, a list of distinct names read into `actions`,
    /// where a request has its one `action`): the same members, read by the same rules.
    mutating func readRequestObject(into request: inout Request, actions: inout [String], maxActions: Int?) throws(RequestError) {
        let actionKey: StaticString = maxActions == nil ? "action" : "actions"
        var seen: UInt8 = 0
        try forEachMember(depth: 1) { p, key throws(RequestError) in
            if p.isKey(key, "subject") {
                try p.once(&seen, 1, key)
                try p.readSubject(into: &request.subject)
            } else if p.isKey(key, actionKey) {
                try p.once(&seen, 2, key)
                if let maxActions { actions = try p.readActions(maxActions: maxActions) } else { request.action = try p.readString() }
            } else if p.isKey(key, "resource") {
                try p.once(&seen, 4, key)
                try p.readResource(into: &request.resource)
            } else if p.isKey(key, "context") {
                try p.once(&seen, 8, key)
                try p.readContext(into: &request.context)
            } else {
                throw p.unknownField(key, allowed: ["subject", "\(actionKey)", "resource", "context"])
            }
        }
        guard seen & 2 != 0 else { throw RequestError(field: "\(actionKey)", "is required", kind: .missingField, offset: pos - 1) }
        guard seen & 4 != 0 else { throw RequestError(field: "resource", "is required", kind: .missingField, offset: pos - 1) }
        if seen & 1 == 0 { Self.clearStrings(of: &request.subject, seen: 0) }
    }

    /// The subject's strings whose keys were not read (bits as `readSubject` sets them) back to nil (see
    /// `Request.reset`). Not inlined: in `readRequestObject` it made the inliner call `nextMember` instead.
    @inline(never)
    static func clearStrings(of subject: inout Subject, seen: UInt8) {
        if seen & 1 == 0 { subject.id = nil }
        if seen & 2 == 0 { subject.tier = nil }
        if seen & 16 == 0 { subject.auth = nil }
    }

    mutating func readSubject(into subject: inout Subject) throws(RequestError) {
        var seen: UInt8 = 0
        try openObject(depth: 2)
        var first = true
        while let key = try nextMember(&first) {
            do throws(RequestError) {
                if isKey(key, "id") {
                    try once(&seen, 1, key)
                    subject.id = try readOptionalString()
                } else if isKey(key, "tier") {
                    try once(&seen, 2, key)
                    subject.tier = try readOptionalString()
                } else if isKey(key, "subscriptionExpiry") {
                    try once(&seen, 4, key)
                    subject.subscriptionExpiry = try readOptionalTimestamp()
                } else if isKey(key, "roles") {
                    try once(&seen, 8, key)
                    try readStringList(into: &subject.roles)
                } else if isKey(key, "auth") {
                    try once(&seen, 16, key)
                    subject.auth = try readAuth()
                } else if isKey(key, "attributes") {
                    try once(&seen, 32, key)
                    try readAttributes(into: &subject.attributes, depth: 3)
                } else {
                    throw unknownField(key, allowed: ["id", "tier", "subscriptionExpiry", "roles", "auth", "attributes"])
                }
            } catch {
                throw error.inside(keyText(key))
            }
        }
        if seen & 19 != 19 { Self.clearStrings(of: &subject, seen: seen) }
    }

    mutating func readAuth() throws(RequestError) -> Authentication? {
        if try skipNull() { return nil }
        let open = pos
        var seen: UInt8 = 0
        var method: String?
        var verifiedAt: Date?
        try forEachMember(depth: 3) { p, key throws(RequestError) in
            if p.isKey(key, "method") {
                try p.once(&seen, 1, key)
                method = try p.readOptionalString()
            } else if p.isKey(key, "verifiedAt") {
                try p.once(&seen, 2, key)
                verifiedAt = try p.readOptionalTimestamp()
            } else {
                throw p.unknownField(key, allowed: ["method", "verifiedAt"])
            }
        }
        guard let method else { throw RequestError(field: "method", "is required when auth is given", kind: .missingField, offset: open) }
        return Authentication(method: method, verifiedAt: verifiedAt)
    }

    mutating func readResource(into resource: inout Resource) throws(RequestError) {
        let open = pos
        var seen: UInt8 = 0
        try openObject(depth: 2)
        var first = true
        while let key = try nextMember(&first) {
            do throws(RequestError) {
                if isKey(key, "type") {
                    try once(&seen, 1, key)
                    guard let type = try readOptionalString() else {
                        throw RequestError(field: "", "is required", kind: .missingField, offset: key.offset)
                    }
                    resource.type = type
                } else if isKey(key, "id") {
                    try once(&seen, 2, key)
                    resource.id = try readOptionalString()
                } else if isKey(key, "ownerId") {
                    try once(&seen, 4, key)
                    resource.ownerId = try readOptionalString()
                } else if isKey(key, "members") {
                    try once(&seen, 8, key)
                    try readMembers(into: &resource.members)
                } else if isKey(key, "usage") {
                    try once(&seen, 16, key)
                    try readUsage(into: &resource.usage)
                } else if isKey(key, "attributes") {
                    try once(&seen, 32, key)
                    try readAttributes(into: &resource.attributes, depth: 3)
                } else {
                    throw unknownField(key, allowed: ["type", "id", "ownerId", "members", "usage", "attributes"])
                }
            } catch {
                throw error.inside(keyText(key))
            }
        }
        guard seen & 1 != 0 else { throw RequestError(field: "type", "is required", kind: .missingField, offset: open) }
        // The strings whose keys were not read back to nil (see `Request.reset`).
        if seen & 2 == 0 { resource.id = nil }
        if seen & 4 == 0 { resource.ownerId = nil }
    }

    mutating func readContext(into context: inout Context) throws(RequestError) {
        var seen: UInt8 = 0
        try openObject(depth: 2)
        var first = true
        while let key = try nextMember(&first) {
            do throws(RequestError) {
                if isKey(key, "now") {
                    try once(&seen, 1, key)
                    context.now = try readOptionalTimestamp()
                } else if isKey(key, "attributes") {
                    try once(&seen, 2, key)
                    try readAttributes(into: &context.attributes, depth: 3)
                } else {
                    throw unknownField(key, allowed: ["now", "attributes"])
                }
            } catch {
                throw error.inside(keyText(key))
            }
        }
    }

    mutating func readMembers(into members: inout [String: String]) throws(RequestError) {
        if try skipNull() { return }
        try openObject(depth: 3)
        var first = true
        while let key = try nextMember(&first) {
            let user = keyText(key)
            do throws(RequestError) {
                let role = try readString()
                if members.updateValue(role, forKey: user) != nil { throw duplicate(key) }
            } catch {
                throw error.inside(user)
            }
        }
    }

    mutating func readUsage(into usage: inout [String: Int]) throws(RequestError) {
        if try skipNull() { return }
        try openObject(depth: 3)
        var first = true
        while let key = try nextMember(&first) {
            let counter = keyText(key)
            do throws(RequestError) {
                let at = pos
                let count = try readInteger()
                guard count >= 0 else {
                    throw RequestError(field: "", "a usage count cannot be negative, found \(count)", kind: .negativeCount, offset: at)
                }
                if usage.updateValue(count, forKey: counter) != nil { throw duplicate(key) }
            } catch {
                throw error.inside(counter)
            }
        }
    }

    mutating func readAttributes(into attributes: inout [String: Value], depth: Int) throws(RequestError) {
        if try skipNull() { return }
        try openObject(depth: depth)
        var first = true
        while let key = try nextMember(&first) {
            let name = keyText(key)
            do throws(RequestError) {
                let value = try readValue(depth: depth)
                if attributes.updateValue(value, forKey: name) != nil { throw duplicate(key) }
            } catch {
                throw error.inside(name)
            }
        }
    }

    // MARK: Typed fields

    mutating func readString() throws(RequestError) -> String {
        guard pos < count, base[pos] == UInt8(ascii: "\"") else { throw wrongType("a string") }
        // Plain ASCII up to the closing quote (the common case) is built here, with no token between the scan and
        // the string (issue 41); the rest as `scanString()` and `makeString` do.
        let start = pos + 1
        let end = JSONBytes.skipPlain(base, from: start, count: count, stopAtNonASCII: true)
        if end < count, base[end] == UInt8(ascii: "\"") {
            pos = end + 1
            if let small = SmallASCII.string(base + start, count: end - start) { return small }
            return String(decoding: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
        }
        return makeString(try scanString(opening: start - 1, plainTo: end))
    }

    mutating func readOptionalString() throws(RequestError) -> String? {
        if try skipNull() { return nil }
        return try readString()
    }

    mutating func readOptionalTimestamp() throws(RequestError) -> Date? {
        if try skipNull() { return nil }
        // The common form `"YYYY-MM-DDTHH:MM:SSZ"` read as words, with no string scan (issue 41): when it holds, its
        // twenty bytes are digits and separators, so the scan below would end at the same quote and parse the same.
        if count - pos >= 22, base[pos] == UInt8(ascii: "\""), base[pos + 21] == UInt8(ascii: "\""),
            let date = Timestamp.parseCommon(base + pos + 1)
        {
            pos += 22
            return date
        }
        guard pos < count, base[pos] == UInt8(ascii: "\"") else { throw wrongType("a string") }
        let token = try scanStringNearEnd()
        let date: Date?
        if token.escaped {
            decodeEscapes(token)
            date = scratch.withUnsafeBufferPointer { Timestamp.parse(utf8: $0) }
        } else {
            date = Timestamp.parse(utf8: UnsafeBufferPointer(start: base + token.start, count: token.end - token.start))
        }
        guard let date else {
            var text = makeString(token)
            if text.count > 40 { text = String(text.prefix(40)) + "…" }
            throw RequestError(
                field: "", "expected an RFC 3339 timestamp such as 2026-11-22T12:00:00Z, found '\(text)'", kind: .invalidTimestamp,
                offset: token.offset)
        }
        return date
    }

    mutating func readStringList(into list: inout [String]) throws(RequestError) {
        if try skipNull() { return }
        guard pos < count, base[pos] == UInt8(ascii: "[") else { throw wrongType("a list of strings") }
        try enter(depth: 3)
        pos += 1
        var first = true
        var index = 0
        while try nextElement(&first) {
            do throws(RequestError) { list.append(try readString()) } catch { throw error.inside("[\(index)]") }
            index += 1
        }
    }

    /// An integer; a number written with a fraction or exponent is accepted when its value is a whole number
    /// that fits (`49.0`, `4.9e1`), as Foundation's decoder did.
    mutating func readInteger() throws(RequestError) -> Int {
        guard pos < count, base[pos] == UInt8(ascii: "-") || (base[pos] >= 0x30 && base[pos] <= 0x39) else {
            throw wrongType("an integer")
        }
        let start = pos
        if case .int(let i) = try number() { return i }
        pos = start
        throw wrongType("an integer")
    }

    /// A number as the data model reads it: an integer literal as `int`; a fraction or exponent as `int` when
    /// its value is whole and below 2^53, as Foundation reads it, else as `double`. Between 2^53 and 2^63 such a
    /// number is refused: there Foundation reads the text again as a `Decimal` and drops the fraction, while the
    /// `Double` is rounded, so two readers would see different integers.
    mutating func number() throws(RequestError) -> Value {
        let start = pos
        switch try scanNumber() {
        case .int(let i): return .int(i)
        case .double(let d):
            let magnitude = d.magnitude
            if magnitude < 0x1p53, let i = Int(exactly: d) { return .int(i) }
            if magnitude >= 0x1p53, magnitude <= 0x1p63 {
                throw RequestError(
                    field: "", "a number from 2^53 to 2^63 written with a fraction or exponent is ambiguous; write it as an integer",
                    kind: .numberOutOfRange, offset: start)
            }
            return .double(d)
        }
    }

    /// A free-form value (an attribute): the JSON data model, numbers as `int` when they are whole and fit.
    mutating func readValue(depth: Int) throws(RequestError) -> Value {
        guard pos < count else { throw syntax("expected a value, found the end of the input") }
        switch base[pos] {
        case UInt8(ascii: "\""):
            return .string(makeString(try scanString()))
        case UInt8(ascii: "{"):
            var map: [String: Value] = [:]
            try readAttributes(into: &map, depth: depth + 1)
            return .map(map)
        case UInt8(ascii: "["):
            try enter(depth: depth + 1)
            pos += 1
            var items: [Value] = []
            var first = true
            while try nextElement(&first) {
                do throws(RequestError) { items.append(try readValue(depth: depth + 1)) } catch { throw error.inside("[\(items.count)]") }
            }
            return .list(items)
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw syntax("expected a value, found \(describeByte())")
        }
    }

    // MARK: Structure

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < count {
            let b = base[pos]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            pos += 1
        }
    }

    /// Consumes `null` and returns true, or returns false at anything else.
    @inline(__always)
    mutating func skipNull() throws(RequestError) -> Bool {
        guard pos < count, base[pos] == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    mutating func literal(_ word: StaticString) throws(RequestError) {
        let n = word.utf8CodeUnitCount
        guard count - pos >= n, memcmp(base + pos, word.utf8Start, n) == 0 else { throw syntax("expected a value, found \(describeByte())") }
        pos += n
    }

    mutating func enter(depth: Int) throws(RequestError) {
        guard depth <= maxDepth else { throw tooDeep() }
    }

    /// Nesting past `maxDepth` at the cursor.
    @inline(never)
    func tooDeep() -> RequestError {
        RequestError(field: "", "nesting deeper than \(maxDepth) levels", kind: .tooDeep, offset: pos)
    }

    /// Consumes the `{` of an object at nesting level `depth`. Inlined, with its refusal out of line: called, its
    /// prologue and the error's code around the two compares cost ~30 instructions an object, four objects a line of
    /// the JSON edge (issue 41, seventh round).
    @_transparent
    mutating func openObject(depth: Int) throws(RequestError) {
        guard pos < count, base[pos] == UInt8(ascii: "{"), depth <= maxDepth else { throw notAnObject() }
        pos += 1
    }

    /// `openObject`'s refusal: not an object at the cursor, or one nested too deep.
    @inline(never)
    mutating func notAnObject() -> RequestError {
        guard pos < count, base[pos] == UInt8(ascii: "{") else { return wrongType("an object") }
        return tooDeep()
    }

    /// Reads the object at the cursor (at nesting level `depth`) member by member: `member` reads the value of each key
    /// (the cursor on it), and an error it throws is named inside that key (`tier` becomes `subject.tier`).
    ///
    /// The request object, `auth`, a batch and a record read through it. `readSubject`, `readResource` and
    /// `readContext`, read on every line of the JSON edge, write this loop in place (the same three steps:
    /// `openObject`, `nextMember`, `error.inside`): given to this loop, their closures' bodies stayed a call per key
    /// (issue 41's seventh round: ~75 instructions a line). `@_transparent`, not `@inline(__always)`: with the latter the
    /// optimiser made a copy of the loop per closure and called it (fifth round); a protocol-generic loop with
    /// `@inline(__always)` members, and local `@inline(__always)` functions, were tried and cost more (5,798, 7,062).
    @_transparent
    mutating func forEachMember(
        depth: Int, _ member: (inout JSONRequestParser, StringToken) throws(RequestError) -> Void
    ) throws(RequestError) {
        try openObject(depth: depth)
        var first = true
        while let key = try nextMember(&first) {
            do throws(RequestError) {
                try member(&self, key)
            } catch {
                throw error.inside(keyText(key))
            }
        }
    }

    /// The next key of an object whose `{` is consumed, with the cursor on its value; nil after the closing `}`.
    ///
    /// `@_transparent`, like `openObject` and `nextItem`, with their errors built out of line: with
    /// `@inline(__always)` the optimiser called it from the larger readers once they had grown past its limits
    /// (`readResource`, ~90 instructions a key; issue 41, seventh round).
    @_transparent
    mutating func nextMember(_ first: inout Bool) throws(RequestError) -> StringToken? {
        guard try nextItem(&first, close: UInt8(ascii: "}"), in: "an object") else { return nil }
        guard pos < count, base[pos] == UInt8(ascii: "\"") else { throw expected("a key in quotes") }
        let key = try scanString()
        skipWhitespace()
        guard pos < count, base[pos] == UInt8(ascii: ":") else { throw expected("':' after a key") }
        pos += 1
        skipWhitespace()
        return key
    }

    /// "invalid JSON: expected `what`, found …" at the cursor, built out of line from the inlined structure.
    @inline(never)
    func expected(_ what: StaticString) -> RequestError {
        syntax("expected \(what), found \(describeByte())")
    }

    /// Whether an array whose `[` is consumed has another element (the cursor then on it); false after `]`.
    @inline(__always)
    mutating func nextElement(_ first: inout Bool) throws(RequestError) -> Bool {
        try nextItem(&first, close: UInt8(ascii: "]"), in: "a list")
    }

    /// Whether a container whose opening bracket is consumed has another item (the cursor then on it); false
    /// after its closing bracket `close`.
    @_transparent
    mutating func nextItem(_ first: inout Bool, close: UInt8, in container: StaticString) throws(RequestError) -> Bool {
        skipWhitespace()
        guard pos < count else { throw unterminated(container) }
        if base[pos] == close {
            pos += 1
            return false
        }
        if first {
            first = false
        } else {
            guard base[pos] == UInt8(ascii: ",") else { throw notASeparator(close: close, in: container) }
            pos += 1
            skipWhitespace()
        }
        return true
    }

    /// "unterminated object" (or list): `nextItem`'s refusal at the end of the input, out of line.
    @inline(never)
    func unterminated(_ container: StaticString) -> RequestError {
        let name = "\(container)"
        return syntax("unterminated \(name.dropFirst(name.hasPrefix("an ") ? 3 : 2))")
    }

    /// `nextItem`'s refusal of a byte that is neither `,` nor the closing bracket, out of line.
    @inline(never)
    func notASeparator(close: UInt8, in container: StaticString) -> RequestError {
        syntax("expected ',' or '\(Character(Unicode.Scalar(close)))' in \(container), found \(describeByte())")
    }

    // MARK: Strings

    /// Scans a string whose opening quote is at the cursor, validating UTF-8 and escapes, and moves past it.
    ///
    /// Inlined where it is called: the common case (plain ASCII up to the closing quote, found eight bytes at a
    /// time) is a few instructions, and a call's prologue and returned token cost as much again (~17 strings a line).
    @inline(__always)
    mutating func scanString() throws(RequestError) -> StringToken {
        let offset = pos
        let start = pos + 1
        let plainEnd = JSONBytes.skipPlain(base, from: start, count: count, stopAtNonASCII: true)
        if plainEnd < count, base[plainEnd] == UInt8(ascii: "\"") {
            pos = plainEnd + 1
            return StringToken(start: start, end: plainEnd, escaped: false, offset: offset, ascii: true)
        }
        return try scanString(opening: offset, plainTo: plainEnd)
    }

    /// `scanString()` for a string that often ends a request (`context.now`, the last field of most lines): its last
    /// bytes are checked as one word too, so it stays on this inlined path instead of calling the byte-by-byte rest
    /// (~100 instructions a line of the edge mix, issue 41). Only here: at every call site it cost more than it saved.
    @inline(__always)
    mutating func scanStringNearEnd() throws(RequestError) -> StringToken {
        let offset = pos
        let start = pos + 1
        let plainEnd = JSONBytes.skipPlainToEnd(base, from: start, count: count)
        if plainEnd < count, base[plainEnd] == UInt8(ascii: "\"") {
            pos = plainEnd + 1
            return StringToken(start: start, end: plainEnd, escaped: false, offset: offset, ascii: true)
        }
        return try scanString(opening: offset, plainTo: plainEnd)
    }

    /// The rest of a string whose bytes from its start up to `plainEnd` are plain ASCII: escapes, multi-byte
    /// sequences, control characters, or no closing quote.
    @inline(never)
    mutating func scanString(opening offset: Int, plainTo plainEnd: Int) throws(RequestError) -> StringToken {
        let start = offset + 1
        pos = plainEnd
        var escaped = false
        var ascii = true
        while true {
            // ASCII without quotes, backslashes or control characters: the common case, eight bytes at a time.
            pos = JSONBytes.skipPlain(base, from: pos, count: count, stopAtNonASCII: true)
            while pos < count {
                let b = base[pos]
                guard b >= 0x20, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\"), b < 0x80 else { break }
                pos += 1
            }
            guard pos < count else { throw syntax("unterminated string", at: offset) }
            let b = base[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                return StringToken(start: start, end: pos - 1, escaped: escaped, offset: offset, ascii: ascii && !escaped)
            } else if b == UInt8(ascii: "\\") {
                escaped = true
                try scanEscape()
            } else if b < 0x20 {
                throw syntax("a control character (0x\(String(b, radix: 16))) must be escaped in a string")
            } else {
                ascii = false
                try scanMultibyte()
            }
        }
    }

    private mutating func scanEscape() throws(RequestError) {
        let at = pos
        guard pos + 1 < count else { throw syntax("unterminated string") }
        switch base[pos + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
            UInt8(ascii: "r"), UInt8(ascii: "t"):
            pos += 2
        case UInt8(ascii: "u"):
            pos += 2
            let unit = try hex4()
            if unit >= 0xD800, unit < 0xDC00 {
                guard count - pos >= 6, base[pos] == UInt8(ascii: "\\"), base[pos + 1] == UInt8(ascii: "u") else {
                    throw RequestError(field: "", "unpaired surrogate escape \\u\(hex(unit))", kind: .unpairedSurrogate, offset: at)
                }
                pos += 2
                let low = try hex4()
                guard low >= 0xDC00, low < 0xE000 else {
                    throw RequestError(field: "", "unpaired surrogate escape \\u\(hex(unit))", kind: .unpairedSurrogate, offset: at)
                }
            } else if unit >= 0xDC00, unit < 0xE000 {
                throw RequestError(field: "", "unpaired surrogate escape \\u\(hex(unit))", kind: .unpairedSurrogate, offset: at)
            }
        default:
            throw syntax("invalid escape in a string", at: at)
        }
    }

    private func hex(_ unit: UInt32) -> String {
        let digits = String(unit, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private mutating func hex4() throws(RequestError) -> UInt32 {
        guard count - pos >= 4 else { throw syntax("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for i in 0..<4 {
            let b = base[pos + i]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw syntax("a \\u escape needs four hex digits", at: pos + i)
            }
            value = value << 4 | UInt32(digit)
        }
        pos += 4
        return value
    }

    /// Validates one multi-byte UTF-8 sequence at the cursor (shortest form, no surrogates, at most U+10FFFF).
    private mutating func scanMultibyte() throws(RequestError) {
        let b0 = base[pos]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw invalidUTF8()
        }
        guard count - pos >= length else { throw invalidUTF8() }
        let b1 = base[pos + 1]
        guard b1 >= low, b1 <= high else { throw invalidUTF8() }
        for i in 2..<max(2, length) where base[pos + i] & 0xC0 != 0x80 { throw invalidUTF8() }
        pos += length
    }

    private func invalidUTF8() -> RequestError {
        RequestError(field: "", "invalid UTF-8 (byte 0x\(String(base[pos], radix: 16, uppercase: true)))", kind: .invalidUTF8, offset: pos)
    }

    /// The text of a scanned string.
    @inline(__always)
    mutating func makeString(_ token: StringToken) -> String {
        if token.ascii, let small = SmallASCII.string(base + token.start, count: token.end - token.start) { return small }
        if !token.escaped {
            return String(decoding: UnsafeBufferPointer(start: base + token.start, count: token.end - token.start), as: UTF8.self)
        }
        decodeEscapes(token)
        return String(decoding: scratch, as: UTF8.self)
    }

    /// A key's text, for paths and dictionary keys.
    mutating func keyText(_ token: StringToken) -> String { makeString(token) }

    /// Whether a key is `name` (escapes decoded, as `"\u0061ction"` is `action`).
    @inline(__always)
    mutating func isKey(_ token: StringToken, _ name: StaticString) -> Bool {
        let n = name.utf8CodeUnitCount
        if !token.escaped {
            return token.end - token.start == n && memcmp(base + token.start, name.utf8Start, n) == 0
        }
        decodeEscapes(token)
        return scratch.count == n && scratch.withUnsafeBufferPointer { memcmp($0.baseAddress!, name.utf8Start, n) == 0 }
    }

    /// Decodes an escaped string (already validated by `scanString`) into `scratch`.
    mutating func decodeEscapes(_ token: StringToken) {
        scratch.removeAll(keepingCapacity: true)
        var i = token.start
        while i < token.end {
            let b = base[i]
            guard b == UInt8(ascii: "\\") else {
                scratch.append(b)
                i += 1
                continue
            }
            let e = base[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = Self.hexValue(base + i)
                i += 4
                if scalar >= 0xD800, scalar < 0xDC00 {
                    let low = Self.hexValue(base + i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                Self.appendUTF8(scalar, to: &scratch)
            default: scratch.append(e)  // " \ /
            }
        }
    }

    private static func hexValue(_ p: UnsafePointer<UInt8>) -> UInt32 {
        var value: UInt32 = 0
        for i in 0..<4 {
            let b = p[i]
            let digit = b <= UInt8(ascii: "9") ? b - UInt8(ascii: "0") : (b | 0x20) - UInt8(ascii: "a") + 10
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        // Written with `UInt8` operands: `UInt8(0x80 | scalar >> 6 & 0x3F)` in a `switch` of ranges took the type
        // checker 212 ms (issue 41 item 4).
        @inline(__always) func low6(_ shift: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: scalar >> shift) & 0x3F | 0x80 }
        if scalar < 0x80 {
            out.append(UInt8(truncatingIfNeeded: scalar))
        } else if scalar < 0x800 {
            out.append(UInt8(truncatingIfNeeded: scalar >> 6) | 0xC0)
            out.append(low6(0))
        } else if scalar < 0x10000 {
            out.append(UInt8(truncatingIfNeeded: scalar >> 12) | 0xE0)
            out.append(low6(6))
            out.append(low6(0))
        } else {
            out.append(UInt8(truncatingIfNeeded: scalar >> 18) | 0xF0)
            out.append(low6(12))
            out.append(low6(6))
            out.append(low6(0))
        }
    }

    // MARK: Numbers

    enum Number {
        case int(Int)
        case double(Double)
    }

    /// Scans a JSON number at the cursor: an integer literal as `Int` (refused when it overflows), anything with a
    /// fraction or exponent as the nearest `Double` (refused when out of range).
    mutating func scanNumber() throws(RequestError) -> Number {
        let start = pos
        let negative = base[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        guard pos < count, base[pos] >= 0x30, base[pos] <= 0x39 else { throw syntax("invalid number", at: start) }
        var value = 0
        var overflow = false
        var significant: UInt64 = 0
        var significantDigits = 0
        var droppedDigits = 0
        if base[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < count, base[pos] >= 0x30, base[pos] <= 0x39 { throw syntax("a number cannot start with 0", at: start) }
        } else {
            while pos < count, base[pos] >= 0x30, base[pos] <= 0x39 {
                let digit = Int(base[pos] &- 0x30)
                // Accumulate negatively so Int.min fits.
                if !overflow {
                    let (m, o1) = value.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.subtractingReportingOverflow(digit)
                    overflow = o1 || o2
                    value = s
                }
                if significantDigits < 19 {
                    significant = significant &* 10 &+ UInt64(digit)
                    if significant != 0 { significantDigits += 1 }
                } else {
                    droppedDigits += 1
                }
                pos += 1
            }
        }
        var isInteger = true
        var fractionDigits = 0
        if pos < count, base[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < count, base[pos] >= 0x30, base[pos] <= 0x39 else { throw syntax("a number needs digits after '.'", at: start) }
            while pos < count, base[pos] >= 0x30, base[pos] <= 0x39 {
                if significantDigits < 19 {
                    significant = significant &* 10 &+ UInt64(base[pos] &- 0x30)
                    if significant != 0 { significantDigits += 1 }
                    fractionDigits += 1
                }
                pos += 1
            }
        }
        var exponent = 0
        if pos < count, base[pos] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            pos += 1
            var negativeExponent = false
            if pos < count, base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-") {
                negativeExponent = base[pos] == UInt8(ascii: "-")
                pos += 1
            }
            guard pos < count, base[pos] >= 0x30, base[pos] <= 0x39 else { throw syntax("a number needs digits in its exponent", at: start) }
            while pos < count, base[pos] >= 0x30, base[pos] <= 0x39 {
                if exponent < 100_000 { exponent = exponent * 10 + Int(base[pos] &- 0x30) }
                pos += 1
            }
            if negativeExponent { exponent = -exponent }
        }
        if isInteger {
            if negative {
                guard !overflow else { throw overflowError(start) }
                return .int(value)
            }
            guard !overflow, value != Int.min else { throw overflowError(start) }
            return .int(-value)
        }
        // Exact when the significand fits in 53 bits and the power of ten is exact (Clinger's fast path).
        let power = exponent + droppedDigits - fractionDigits
        var result: Double
        if significant < (1 << 53), power >= -22, power <= 22 {
            result = Double(significant)
            if power < 0 { result /= Self.powersOfTen[-power] } else { result *= Self.powersOfTen[power] }
            if negative { result = -result }
        } else {
            // The sign is part of the text here.
            let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
            result = Double(text) ?? .infinity
        }
        guard result.isFinite else {
            throw RequestError(field: "", "number out of range", kind: .numberOutOfRange, offset: start)
        }
        return .double(result)
    }

    private static let powersOfTen: [Double] = (0...22).map { i in (0..<i).reduce(1.0) { acc, _ in acc * 10 } }

    private func overflowError(_ start: Int) -> RequestError {
        RequestError(field: "", "integer does not fit in 64 bits", kind: .integerOverflow, offset: start)
    }

    // MARK: Errors

    mutating func once(_ seen: inout UInt8, _ bit: UInt8, _ key: StringToken) throws(RequestError) {
        guard seen & bit == 0 else { throw duplicate(key) }
        seen |= bit
    }

    mutating func duplicate(_ key: StringToken) -> RequestError {
        RequestError(field: "", "duplicate key '\(makeString(key))'", kind: .duplicateKey, offset: key.offset)
    }

    mutating func unknownField(_ key: StringToken, allowed: [String]) -> RequestError {
        var message = "unknown field"
        if let match = Suggestion.closest(to: makeString(key), in: allowed) { message += "; did you mean '\(match)'?" }
        return RequestError(field: "", message, kind: .unknownField, offset: key.offset)
    }

    func syntax(_ message: String, at offset: Int? = nil) -> RequestError {
        RequestError(field: "", "invalid JSON: " + message, kind: .syntax, offset: offset ?? pos)
    }

    /// A wrong-type error at the cursor: "expected a string, found int".
    mutating func wrongType(_ expected: String) -> RequestError {
        let at = pos
        let found = foundKind()
        pos = at
        guard let found else { return syntax("expected \(expected), found \(describeByte())") }
        return RequestError(field: "", "expected \(expected), found \(found)", kind: .wrongType, offset: at)
    }

    /// The kind name (`Value.kindName`) of the value at the cursor, or nil when none starts there.
    private mutating func foundKind() -> String? {
        guard pos < count else { return nil }
        switch base[pos] {
        case UInt8(ascii: "\""): return "string"
        case UInt8(ascii: "{"): return "map"
        case UInt8(ascii: "["): return "list"
        case UInt8(ascii: "t"): return (try? literal("true")) != nil ? "bool" : nil
        case UInt8(ascii: "f"): return (try? literal("false")) != nil ? "bool" : nil
        case UInt8(ascii: "n"): return (try? literal("null")) != nil ? "null" : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            switch try? number() {
            case .int?: return "int"
            default: return "double"
            }
        default: return nil
        }
    }

    func describeByte() -> String {
        guard pos < count else { return "the end of the input" }
        let b = base[pos]
        if b >= 0x21, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x\(String(b, radix: 16, uppercase: true))"
    }
}
