import Foundation
import GatehouseTestSupport
import PolicyModel
import Testing

/// The hand-written reader against Foundation: on generated valid request JSON, `Request(json:)` must give the
/// same `Request` as Foundation's `JSONDecoder` value tree read by `Request(value:)`.
@Suite(.computeBound) struct RequestReaderDifferentialTests {
    @Test func agreesWithFoundationOnGeneratedRequests() throws {
        var generator = RequestJSONGenerator(seed: 0x5EED_0011)
        var reused = Request(action: "", resource: Resource(type: ""))
        let reader = RequestReader()
        var escapesSeen = 0, attributesSeen = 0
        for _ in 0..<3000 {
            let text = generator.request()
            let reference: Request
            do {
                reference = try Request(value: Value.parseJSON(text))
            } catch {
                Issue.record("Foundation refused a generated request: \(error)\n\(text)")
                continue
            }
            let read = try Request(json: text)
            #expect(read == reference, "\(text)")
            // Reading into a value that held another request gives the same result.
            try Array(text.utf8).withUnsafeBytes { try reader.read($0, into: &reused) }
            #expect(reused == reference, "reused: \(text)")
            if text.contains("\\") { escapesSeen += 1 }
            if !reference.subject.attributes.isEmpty || !reference.resource.attributes.isEmpty { attributesSeen += 1 }
        }
        // The generator must keep reaching the interesting shapes.
        #expect(escapesSeen > 500)
        #expect(attributesSeen > 500)
    }

    @Test func timestampsAgreeWithFoundationWhereverTheyAreAccepted() {
        var random = SeededRandom(seed: 0x7135_7A3F)
        var accepted = 0
        for _ in 0..<20_000 {
            let text = RequestJSONGenerator.timestamp(&random, valid: random.chance(70))
            guard let mine = Timestamp.parse(text) else { continue }
            accepted += 1
            let foundation =
                (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false)))
                ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            #expect(foundation == mine, "\(text): Foundation \(String(describing: foundation?.timeIntervalSince1970)), mine \(mine.timeIntervalSince1970)")
        }
        #expect(accepted > 10_000)
    }

    @Test(arguments: [
        "2026-02-29T00:00:00Z", "2026-02-30T12:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T23:59:60Z", "2026-11-22T12:60:00Z",
        "2026-11-22t12:00:00z", "2026-11-22 12:00:00Z", "2026-11-22T12:00:00+0100", "2026-11-22T12:00:00.Z",
        "2026-11-22T12:00:00.1234567891Z", "2026-11-22T12:00Z", "0000-01-01T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-22T12:00:00+24:00",
    ])
    func refusesWhatIsNotARealRFC3339Instant(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test func readsOffsetsAndFractions() {
        #expect(Timestamp.parse("2026-11-22T13:30:00+01:30")?.timeIntervalSince1970 == 1_795_348_800)
        #expect(Timestamp.parse("2026-11-22T10:00:00-02:00")?.timeIntervalSince1970 == 1_795_348_800)
        #expect(Timestamp.parse("2026-11-22T12:00:00.5Z")?.timeIntervalSince1970 == 1_795_348_800.5)
        #expect(Timestamp.parse("2024-02-29T00:00:00Z")?.timeIntervalSince1970 == 1_709_164_800)
        #expect(Timestamp.parse("1969-12-31T23:59:59Z")?.timeIntervalSince1970 == -1)
    }
}

/// Seeded request JSON in varied but valid forms: keys in any order, optional fields absent or `null`,
/// whitespace, escapes (including surrogate pairs) in strings and keys, non-ASCII text, integers written as
/// `49.0` or `4.9e1`, nested attribute values of every kind.
struct RequestJSONGenerator {
    var random: SeededRandom

    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    mutating func request() -> String {
        var fields: [(String, String)] = []
        if random.chance(85) { fields.append(("subject", subject())) }
        fields.append(("action", string(pick(["view", "add_source", "checkout", "ai_suggestions", "edit", "browse"]))))
        fields.append(("resource", resource()))
        if random.chance(60) {
            var c: [(String, String)] = []
            if random.chance(80) { c.append(("now", optional(string(Self.timestamp(&random, valid: true))))) }
            if random.chance(30) { c.append(("attributes", attributes(depth: 0))) }
            fields.append(("context", object(c)))
        }
        return object(fields)
    }

    mutating func subject() -> String {
        var s: [(String, String)] = []
        if random.chance(80) { s.append(("id", optional(string(text())))) }
        if random.chance(80) { s.append(("tier", optional(string(pick(["free", "pro", "academic", "team", "Pro", ""]))))) }
        if random.chance(30) { s.append(("subscriptionExpiry", optional(string(Self.timestamp(&random, valid: true))))) }
        if random.chance(50) {
            s.append(("roles", random.chance(10) ? "null" : "[" + (0..<random.below(4)).map { _ in string(text()) }.joined(separator: ws(",")) + "]"))
        }
        if random.chance(60) {
            if random.chance(10) {
                s.append(("auth", "null"))
            } else {
                var a: [(String, String)] = [("method", string(pick(["pin", "biometric", "apple", "anonymous", "password", "sms"])))]
                if random.chance(70) { a.append(("verifiedAt", optional(string(Self.timestamp(&random, valid: true))))) }
                s.append(("auth", object(a)))
            }
        }
        if random.chance(40) { s.append(("attributes", attributes(depth: 0))) }
        return object(s)
    }

    mutating func resource() -> String {
        var r: [(String, String)] = [("type", string(pick(["app", "project", "space", "order", "store"])))]
        if random.chance(50) { r.append(("id", optional(string(text())))) }
        if random.chance(40) { r.append(("ownerId", optional(string(text())))) }
        if random.chance(40) {
            let members = (0..<random.below(4)).map { i in ("u\(i)" + text(), string(pick(["owner", "editor", "viewer", "commenter", "é"]))) }
            r.append(("members", random.chance(10) ? "null" : object(members)))
        }
        if random.chance(50) {
            let usage = (0..<random.below(3)).map { i in ("c\(i)" + text(), count()) }
            r.append(("usage", random.chance(10) ? "null" : object(usage)))
        }
        if random.chance(40) { r.append(("attributes", attributes(depth: 0))) }
        return object(r)
    }

    mutating func attributes(depth: Int) -> String {
        if random.chance(5) { return "null" }
        return object((0..<random.below(4)).map { i in ("k\(i)" + text(), value(depth: depth + 1)) })
    }

    mutating func value(depth: Int) -> String {
        switch random.below(depth < 3 ? 9 : 7) {
        case 0: return "null"
        case 1: return random.chance(50) ? "true" : "false"
        case 2: return String(pick([0, 1, -1, 42, Int.max, Int.min, 1_000_000_007, -987_654_321]))
        case 3:
            // Whole numbers written as doubles read as `int`, as Foundation reads them.
            return pick(["1.0", "1e2", "4.9e1", "-0.0", "2.5", "0.1", "-3.75", "1e-5", "6.02214076e23", "1.7976931348623157e308", "5e-324", "0.30000000000000004"])
        case 4: return "\(Double(random.below(2_000_000) - 1_000_000) / Double(pick([3, 7, 10, 1024, 1_000_003])))"
        case 5, 6: return string(text())
        case 7: return "[" + (0..<random.below(4)).map { _ in value(depth: depth + 1) }.joined(separator: ws(",")) + "]"
        default: return attributes(depth: depth)
        }
    }

    /// A usage count: non-negative, sometimes written with a fraction or exponent.
    mutating func count() -> String {
        let n = pick([0, 1, 49, 50, 51, 1000, Int.max, random.below(100_000)])
        switch random.below(6) {
        case 0 where n < 1_000_000: return "\(n).0"
        case 1 where n >= 10 && n < 1_000_000 && n % 10 == 0: return "\(n / 10)e1"
        case 2 where n < 1_000_000: return "\(n)E0"
        default: return "\(n)"
        }
    }

    /// Short text, sometimes non-ASCII, sometimes needing escapes.
    mutating func text() -> String {
        let pieces = ["a", "user-1", "Zoë", "日本", "😀", "\"", "\\", "\n", "\t", "/", "\u{1}", "\u{7F}", "é", "x y", "\u{10FFFF}", ""]
        return (0..<random.below(4)).map { _ in pick(pieces) }.joined()
    }

    /// A JSON string literal for `s`, escaping in one of several valid ways.
    mutating func string(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += random.chance(50) ? "\\n" : "\\u000a"
            case "\t": out += random.chance(50) ? "\\t" : "\\u0009"
            case "/": out += random.chance(50) ? "\\/" : "/"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            case _ where scalar.value > 0x7F && random.chance(30):
                for unit in String(scalar).utf16 { out += String(format: random.chance(50) ? "\\u%04x" : "\\u%04X", unit) }
            case "a" where random.chance(10): out += "\\u0061"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    mutating func object(_ fields: [(String, String)]) -> String {
        var fields = fields
        fields.shuffle(using: &random)
        return "{" + ws("") + fields.map { string($0.0) + ws(":") + $0.1 }.joined(separator: ws(",")) + ws("") + "}"
    }

    mutating func optional(_ value: String) -> String { random.chance(10) ? "null" : value }

    mutating func ws(_ s: String) -> String {
        guard random.chance(30) else { return s }
        return pick([" ", "\n", "\t", "\r\n", "  "]) + s + pick(["", " ", "\n  "])
    }

    mutating func pick<T>(_ items: [T]) -> T { random.pick(items) }

    /// An RFC 3339 timestamp; when not `valid`, one that may be wrong in one place.
    static func timestamp(_ random: inout SeededRandom, valid: Bool) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = random.chance(10) ? random.pick([1583, 1600, 1900, 2000, 2100, 9999]) : 1970 + random.below(130)
        let month = 1 + random.below(12)
        let days = [31, (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        var parts = [
            String(repeating: "0", count: 4 - String(year).count) + String(year), "-", two(month), "-", two(1 + random.below(days)), "T",
            two(random.below(24)), ":", two(random.below(60)), ":", two(random.below(60)),
        ]
        if random.chance(50) { parts.append("." + (0..<(1 + random.below(9))).map { _ in String(random.below(10)) }.joined()) }
        if random.chance(50) {
            parts.append("Z")
        } else {
            parts.append((random.chance(50) ? "+" : "-") + two(random.below(15)) + ":" + two(random.pick([0, 15, 30, 45, random.below(60)])))
        }
        if !valid {
            switch random.below(9) {
            case 0: parts[2] = two(random.pick([0, 13, 99]))
            case 1: parts[4] = two(random.pick([0, 29, 30, 31, 32]))
            case 2: parts[6] = two(random.pick([24, 25, 99]))
            case 3: parts[8] = two(random.pick([60, 61]))
            case 4: parts[10] = two(random.pick([60, 99]))
            case 5: parts[5] = random.pick(["t", " ", "_"])
            case 7: parts[0] = random.pick(["0001", "1582", "0000"])
            case 6: parts[parts.count - 1] = random.pick(["z", "+0100", "+01", "", "+24:00", "-00:60"])
            default: parts.append(random.pick([".", ".1234567891", "x", " "]))
            }
        }
        return parts.joined()
    }
}
