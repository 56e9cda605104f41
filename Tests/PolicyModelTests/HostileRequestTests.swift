import Foundation
import PolicyModel
import Testing

/// Hostile and malformed request JSON, each refused with the expected kind, field and byte offset.
@Suite struct HostileRequestTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var kind: RequestError.Kind
        var field: String
        var offset: Int?
        var testDescription: String { name }

        init(_ name: String, _ text: String, _ kind: RequestError.Kind, _ field: String, at offset: Int? = nil) {
            self.init(name, Array(text.utf8), kind, field, at: offset)
        }

        init(_ name: String, _ bytes: [UInt8], _ kind: RequestError.Kind, _ field: String, at offset: Int? = nil) {
            self.name = name
            self.bytes = bytes
            self.kind = kind
            self.field = field
            self.offset = offset
        }
    }

    static let resource = #""resource":{"type":"app"}"#

    static let cases: [Case] = [
        // A key given twice: two components reading one request differently is an authorization bypass.
        Case("duplicate action", #"{"action":"browse","action":"checkout",\#(resource)}"#, .duplicateKey, "action", at: 19),
        Case("duplicate action spelled with an escape", #"{"action":"browse","\u0061ction":"checkout",\#(resource)}"#, .duplicateKey, "action", at: 19),
        Case("duplicate subject id", #"{"subject":{"id":"a","id":"b"},"action":"x",\#(resource)}"#, .duplicateKey, "subject.id", at: 21),
        Case("duplicate member", #"{"action":"x","resource":{"type":"p","members":{"u1":"viewer","u1":"owner"}}}"#, .duplicateKey, "resource.members.u1", at: 62),
        Case("duplicate usage counter", #"{"action":"x","resource":{"type":"p","usage":{"n":1,"n":99}}}"#, .duplicateKey, "resource.usage.n", at: 52),
        Case("duplicate nested attribute", #"{"action":"x","resource":{"type":"p","attributes":{"a":{"b":1,"b":2}}}}"#, .duplicateKey, "resource.attributes.a.b", at: 62),
        Case("duplicate resource", #"{"action":"x",\#(resource),\#(resource)}"#, .duplicateKey, "resource", at: 40),
        Case("duplicate auth method", #"{"subject":{"auth":{"method":"pin","method":"biometric"}},"action":"x",\#(resource)}"#, .duplicateKey, "subject.auth.method", at: 35),
        // Negative and overflowing counters.
        Case("negative usage", #"{"action":"x","resource":{"type":"app","usage":{"sources":-1}}}"#, .negativeCount, "resource.usage.sources", at: 58),
        Case("Int.min usage", #"{"action":"x","resource":{"type":"app","usage":{"sources":-9223372036854775808}}}"#, .negativeCount, "resource.usage.sources", at: 58),
        Case("usage past Int.max", #"{"action":"x","resource":{"type":"app","usage":{"sources":9223372036854775808}}}"#, .integerOverflow, "resource.usage.sources", at: 58),
        Case("usage far past Int.max", #"{"action":"x","resource":{"type":"app","usage":{"sources":123456789012345678901234567890}}}"#, .integerOverflow, "resource.usage.sources", at: 58),
        Case("usage below Int.min", #"{"action":"x","resource":{"type":"app","usage":{"sources":-9223372036854775809}}}"#, .integerOverflow, "resource.usage.sources", at: 58),
        Case("usage as a huge double", #"{"action":"x","resource":{"type":"app","usage":{"sources":1e300}}}"#, .wrongType, "resource.usage.sources", at: 58),
        Case("usage as a fraction", #"{"action":"x","resource":{"type":"app","usage":{"sources":49.5}}}"#, .wrongType, "resource.usage.sources", at: 58),
        Case("attribute integer overflow", #"{"action":"x","resource":{"type":"app","attributes":{"n":[1,99999999999999999999]}}}"#, .integerOverflow, "resource.attributes.n[1]", at: 60),
        Case("big number with a fraction: Double and Decimal disagree", #"{"action":"x","resource":{"type":"app","attributes":{"n":9223332036854777777.7}}}"#, .numberOutOfRange, "resource.attributes.n", at: 57),
        Case("2^63 - 1 written as a double", #"{"action":"x","resource":{"type":"app","usage":{"n":9223372036854775807.0}}}"#, .numberOutOfRange, "resource.usage.n", at: 52),
        Case("attribute number out of range", #"{"action":"x","resource":{"type":"app","attributes":{"n":1e400}}}"#, .numberOutOfRange, "resource.attributes.n", at: 57),
        // Invalid UTF-8: two byte strings must never become one user.
        Case("invalid UTF-8 in an id", Array(#"{"subject":{"id":"u"#.utf8) + [0xFF] + Array(#""},"action":"x","resource":{"type":"app"}}"#.utf8), .invalidUTF8, "subject.id", at: 19),
        Case("overlong encoding of '/'", Array(#"{"subject":{"id":""#.utf8) + [0xC0, 0xAF] + Array(#""},"action":"x","resource":{"type":"app"}}"#.utf8), .invalidUTF8, "subject.id", at: 18),
        Case("UTF-8 encoded surrogate", Array(#"{"action":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"","resource":{"type":"app"}}"#.utf8), .invalidUTF8, "action", at: 11),
        Case("truncated UTF-8 sequence", Array(#"{"action":""#.utf8) + [0xE6, 0x97] + Array(#"","resource":{"type":"app"}}"#.utf8), .invalidUTF8, "action", at: 11),
        Case("code point past U+10FFFF", Array(#"{"action":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#"","resource":{"type":"app"}}"#.utf8), .invalidUTF8, "action", at: 11),
        Case("invalid UTF-8 in a key", Array(#"{"action":"x","resource":{"type":"app","attributes":{""#.utf8) + [0x80] + Array(#"":1}}}"#.utf8), .invalidUTF8, "resource.attributes", at: 54),
        // Unpaired surrogate escapes.
        Case("lone high surrogate", #"{"subject":{"id":"\ud800"},"action":"x",\#(resource)}"#, .unpairedSurrogate, "subject.id", at: 18),
        Case("lone low surrogate", #"{"subject":{"id":"a\udc00"},"action":"x",\#(resource)}"#, .unpairedSurrogate, "subject.id", at: 19),
        Case("high surrogate then a letter", #"{"subject":{"id":"\ud83dx"},"action":"x",\#(resource)}"#, .unpairedSurrogate, "subject.id", at: 18),
        Case("two high surrogates", #"{"subject":{"id":"\ud83d\ud83d"},"action":"x",\#(resource)}"#, .unpairedSurrogate, "subject.id", at: 18),
        // Nesting and size.
        Case("deep nesting in attributes", #"{"action":"x","resource":{"type":"app","attributes":{"a":"# + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}}}", .tooDeep, "resource.attributes.a" + String(repeating: "[0]", count: 29), at: 86),
        // Structure and types.
        Case("not JSON", "not json", .syntax, "", at: 0),
        Case("empty", "", .syntax, "", at: 0),
        Case("only whitespace", "  \n", .syntax, "", at: 3),
        Case("a list, not an object", "[1]", .wrongType, "", at: 0),
        Case("trailing text", #"{"action":"x",\#(resource)} {}"#, .syntax, "", at: 41),
        Case("trailing comma", #"{"action":"x",\#(resource),}"#, .syntax, "", at: 40),
        Case("unterminated string", #"{"action":"x"#, .syntax, "action", at: 10),
        Case("unterminated object", #"{"action":"x""#, .syntax, "", at: 13),
        Case("raw newline in a string", "{\"action\":\"a\nb\",\(resource)}", .syntax, "action", at: 12),
        Case("bad escape", #"{"action":"a\qb",\#(resource)}"#, .syntax, "action", at: 12),
        Case("short unicode escape", #"{"action":"\u12",\#(resource)}"#, .syntax, "action", at: 15),
        Case("leading zero", #"{"action":"x","resource":{"type":"app","usage":{"n":01}}}"#, .syntax, "resource.usage.n", at: 52),
        Case("bare minus", #"{"action":"x","resource":{"type":"app","usage":{"n":-}}}"#, .syntax, "resource.usage.n", at: 52),
        Case("NaN", #"{"action":"x","resource":{"type":"app","attributes":{"n":NaN}}}"#, .syntax, "resource.attributes.n", at: 57),
        Case("single quotes", #"{'action':'x'}"#, .syntax, "", at: 1),
        Case("unknown field with a suggestion", #"{"action":"x","resource":{"typ":"app"}}"#, .unknownField, "resource.typ", at: 26),
        Case("unknown top-level field", #"{"action":"x",\#(resource),"admin":true}"#, .unknownField, "admin", at: 40),
        Case("action missing", #"{\#(resource)}"#, .missingField, "action"),
        Case("resource missing", #"{"action":"x"}"#, .missingField, "resource"),
        Case("type missing", #"{"action":"x","resource":{}}"#, .missingField, "resource.type", at: 25),
        Case("type null", #"{"action":"x","resource":{"type":null}}"#, .missingField, "resource.type", at: 26),
        Case("auth without method", #"{"subject":{"auth":{}},"action":"x",\#(resource)}"#, .missingField, "subject.auth.method", at: 19),
        Case("action not a string", #"{"action":3,\#(resource)}"#, .wrongType, "action", at: 10),
        Case("action null", #"{"action":null,\#(resource)}"#, .wrongType, "action", at: 10),
        Case("subject null", #"{"subject":null,"action":"x",\#(resource)}"#, .wrongType, "subject", at: 11),
        Case("role not a string", #"{"subject":{"roles":["a",1]},"action":"x",\#(resource)}"#, .wrongType, "subject.roles[1]", at: 25),
        Case("member role not a string", #"{"action":"x","resource":{"type":"p","members":{"u1":true}}}"#, .wrongType, "resource.members.u1", at: 53),
        Case("usage as a string", #"{"action":"x","resource":{"type":"app","usage":{"sources":"many"}}}"#, .wrongType, "resource.usage.sources", at: 58),
        Case("bad timestamp", #"{"subject":{"auth":{"method":"pin","verifiedAt":"yesterday"}},"action":"x",\#(resource)}"#, .invalidTimestamp, "subject.auth.verifiedAt", at: 48),
        Case("February 30", #"{"action":"x",\#(resource),"context":{"now":"2026-02-30T12:00:00Z"}}"#, .invalidTimestamp, "context.now", at: 57),
    ]

    @Test(arguments: cases)
    func isRefusedWithKindFieldAndOffset(_ c: Case) {
        do {
            let request = try Request(json: c.bytes)
            Issue.record("read as \(request)")
        } catch {
            #expect(error.kind == c.kind, "\(error)")
            #expect(error.field == c.field, "\(error)")
            if let offset = c.offset { #expect(error.offset == offset, "\(error)") }
            #expect(!error.message.isEmpty)
        }
    }

    @Test func refusesInputPastTheSizeLimit() throws {
        let padding = String(repeating: "x", count: 2 << 20)
        let text = #"{"action":"x","resource":{"type":"app","id":"\#(padding)"}}"#
        #expect(throws: RequestError(field: "", "request is \(text.utf8.count) bytes, more than the limit of 1048576", kind: .tooLarge, offset: 1 << 20)) {
            try Request(json: text)
        }
        // The limit is configurable both ways.
        _ = try Request(json: text, limits: RequestLimits(maxBytes: 3 << 20))
        #expect(throws: RequestError.self) { try Request(json: #"{"action":"x",\#(Self.resource)}"#, limits: RequestLimits(maxBytes: 10)) }
    }

    @Test func nestingUpToTheLimitIsRead() throws {
        // The request is level 1, resource 2, attributes 3: 29 more lists make 32.
        let within = #"{"action":"x","resource":{"type":"app","attributes":{"a":"# + String(repeating: "[", count: 29) + String(repeating: "]", count: 29) + "}}}"
        _ = try Request(json: within)
        let past = #"{"action":"x","resource":{"type":"app","attributes":{"a":"# + String(repeating: "[", count: 30) + String(repeating: "]", count: 30) + "}}}"
        #expect(throws: RequestError.self) { try Request(json: past) }
        #expect(throws: RequestError.self) { try Request(json: within, limits: RequestLimits(maxDepth: 8)) }
    }

    @Test func errorsDescribeFieldMessageAndOffset() {
        do {
            _ = try Request(json: #"{"action":"x","resource":{"type":"app","usage":{"sources":-1}}}"#)
            Issue.record("read a negative count")
        } catch {
            #expect(error.description == "resource.usage.sources: a usage count cannot be negative, found -1 (at byte 58)")
        }
    }

    @Test func acceptsWhatFoundationAcceptsAtTheEdges() throws {
        // A byte order mark, whole numbers written as doubles, escapes in keys, nulls for optional fields.
        let text = "\u{FEFF}" + #"{"\u0061ction":"x","subject":{"id":null,"roles":null,"auth":null,"attributes":null},"resource":{"type":"app","usage":{"n":4.9e1,"m":0.0},"members":null}}"#
        let request = try Request(json: text)
        #expect(request.action == "x")
        #expect(request.resource.usage == ["n": 49, "m": 0])
        #expect(request == (try Request(value: Value.parseJSON(text))))
    }
}
