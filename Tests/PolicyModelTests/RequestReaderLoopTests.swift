import PolicyModel
import Testing

/// Pins what the request reader gave before its hot objects (`subject`, `resource`, `context`) got their member loop
/// written in place and its structural errors moved out of line (issue 41, seventh round): every key order and
/// spelling reads the same request, and each key given twice, each unknown key, each wrong value and each broken
/// object gives the same error (field, message, kind, offset) as main's reader did.
@Suite struct RequestReaderLoopTests {
    static let subject: [(String, String)] = [
        ("id", #""user-1""#), ("tier", #""pro""#), ("subscriptionExpiry", #""2027-01-01T00:00:00Z""#),
        ("roles", #"["a","b"]"#), ("auth", #"{"method":"pin","verifiedAt":"2026-11-22T11:00:00Z"}"#),
        ("attributes", #"{"analytics":true}"#),
    ]
    static let resource: [(String, String)] = [
        ("type", #""project""#), ("id", #""p1""#), ("ownerId", #""user-0""#), ("members", #"{"user-1":"editor"}"#),
        ("usage", #"{"sources":3}"#), ("attributes", #"{"a":[1,{"b":null}]}"#),
    ]
    static let context: [(String, String)] = [("now", #""2026-11-22T12:00:00Z""#), ("attributes", #"{"ip":"10.0.0.1"}"#)]

    /// `{"k":v,…}` with the members in `order`, each key's first letter escaped where `escaped` has its bit.
    static func object(_ members: [(String, String)], order: [Int], escaped: Int) -> String {
        let fields = order.map { i -> String in
            let (key, value) = members[i]
            let first = key.unicodeScalars.first!.value
            let spelled = escaped & (1 << i) != 0 ? "\\u00" + String(first, radix: 16) + key.dropFirst() : key
            return "\"\(spelled)\":\(value)"
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func request(subject: String, resource: String, context: String) -> String {
        #"{"subject":\#(subject),"action":"x","resource":\#(resource),"context":\#(context)}"#
    }

    static func permutations(_ n: Int) -> [[Int]] {
        guard n > 0 else { return [[]] }
        return permutations(n - 1).flatMap { p in (0...p.count).map { at in var q = p; q.insert(n - 1, at: at); return q } }
    }

    @Test func everyKeyOrderAndSpellingReadsTheSameRequest() throws {
        let plain = { (members: [(String, String)]) in Self.object(members, order: Array(members.indices), escaped: 0) }
        let expected = try Request(json: Self.request(subject: plain(Self.subject), resource: plain(Self.resource), context: plain(Self.context)))
        #expect(expected.subject.roles == ["a", "b"] && expected.resource.members == ["user-1": "editor"] && expected.context.now != nil)
        var reused = Request(action: "", resource: Resource(type: ""))
        var read = 0
        for (index, order) in Self.permutations(6).enumerated() {
            let escaped = index % 64
            let text = Self.request(
                subject: Self.object(Self.subject, order: order, escaped: escaped),
                resource: Self.object(Self.resource, order: order.reversed(), escaped: 63 - escaped),
                context: Self.object(Self.context, order: index % 2 == 0 ? [0, 1] : [1, 0], escaped: index % 4))
            #expect(try Request(json: text) == expected, "\(text)")
            try Array(text.utf8).withUnsafeBytes { try RequestReader().read($0, into: &reused) }
            #expect(reused == expected, "reused: \(text)")
            read += 1
        }
        #expect(read == 720)
    }

    @Test func eachKeyGivenTwiceIsRefusedAtItsSecondSpelling() {
        for (object, members) in [("subject", Self.subject), ("resource", Self.resource), ("context", Self.context)] {
            for (key, value) in members {
                let twice = "{\"\(key)\":\(value),\"\\u00\(String(key.unicodeScalars.first!.value, radix: 16))\(key.dropFirst())\":\(value)}"
                let others = [("subject", "{}"), ("resource", #"{"type":"app"}"#), ("context", "{}")].map { $0.0 == object ? ($0.0, twice) : $0 }
                let text = #"{"subject":\#(others[0].1),"action":"x","resource":\#(others[1].1),"context":\#(others[2].1)}"#
                let offset = text.utf8.count - Array(text.utf8.reversed()).firstIndex(of: UInt8(ascii: "\\"))! - 2
                let error = RequestError(field: "\(object).\(key)", "duplicate key '\(key)'", kind: .duplicateKey, offset: offset)
                #expect(throws: error, "\(text)") { try Request(json: text) }
            }
        }
    }

    /// Each line's error as main's reader (before this round) gave it, read through `policy decide --jsonl`.
    static let refused: [(String, RequestError)] = [
        (#"{"subject":{"id":"u" "tier":"free"},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject", "invalid JSON: expected ',' or '}' in an object, found '\"'", kind: .syntax, offset: 21)),
        (#"{"subject":{"id":"u",},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject", "invalid JSON: expected a key in quotes, found '}'", kind: .syntax, offset: 21)),
        (#"{"subject":{"id":"u"],"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject", "invalid JSON: expected ',' or '}' in an object, found ']'", kind: .syntax, offset: 20)),
        (#"{"subject":{id:"u"},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject", "invalid JSON: expected a key in quotes, found 'i'", kind: .syntax, offset: 12)),
        (#"{"subject":{"id":"u""#, RequestError(field: "subject", "invalid JSON: unterminated object", kind: .syntax, offset: 20)),
        (#"{"subject":[],"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject", "expected an object, found list", kind: .wrongType, offset: 11)),
        (#"{"subject":{"tier":5},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject.tier", "expected a string, found int", kind: .wrongType, offset: 19)),
        (#"{"subject":{"tir":"free"},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject.tir", "unknown field; did you mean 'tier'?", kind: .unknownField, offset: 12)),
        (#"{"action":"x","resource":{"type":"app","owner":"u"}}"#,
         RequestError(field: "resource.owner", "unknown field", kind: .unknownField, offset: 39)),
        (#"{"action":"x","resource":{"type":"app","usage":{"n":1,}}}"#,
         RequestError(field: "resource.usage", "invalid JSON: expected a key in quotes, found '}'", kind: .syntax, offset: 54)),
        (#"{"action":"x","resource":{"type":"app","members":{"u":"a" "v":"b"}}}"#,
         RequestError(field: "resource.members", "invalid JSON: expected ',' or '}' in an object, found '\"'", kind: .syntax, offset: 58)),
        (#"{"action":"x","resource":{"type":"app","attributes":{"a":[1,2}}}"#,
         RequestError(field: "resource.attributes.a", "invalid JSON: expected ',' or ']' in a list, found '}'", kind: .syntax, offset: 61)),
        (#"{"action":"x","resource":{"type":"app","attributes":{"a":[1,2"#,
         RequestError(field: "resource.attributes.a", "invalid JSON: unterminated list", kind: .syntax, offset: 61)),
        (#"{"action":"x","resource":{"type":"app"},"context":{"nw":1}}"#,
         RequestError(field: "context.nw", "unknown field; did you mean 'now'?", kind: .unknownField, offset: 51)),
        (#"{"action":"x","resource":{"type":"app"},"context":{"now":1}}"#,
         RequestError(field: "context.now", "expected a string, found int", kind: .wrongType, offset: 57)),
        (#"{"action":"x","resource":{"type":"app"},"context":5}"#,
         RequestError(field: "context", "expected an object, found int", kind: .wrongType, offset: 50)),
        (#"{"action":"x","resource":{"type":null}}"#, RequestError(field: "resource.type", "is required", kind: .missingField, offset: 26)),
        (#"{"action":"x","resource":{"id":"p"}}"#, RequestError(field: "resource.type", "is required", kind: .missingField, offset: 25)),
        (#"{"subject":{"auth":{"method":"pin" "verifiedAt":null}},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject.auth", "invalid JSON: expected ',' or '}' in an object, found '\"'", kind: .syntax, offset: 35)),
        (#"{"subject":{"roles":["a" "b"]},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject.roles", "invalid JSON: expected ',' or ']' in a list, found '\"'", kind: .syntax, offset: 25)),
        (#"{"subject":{"roles":["a",]},"action":"x","resource":{"type":"app"}}"#,
         RequestError(field: "subject.roles[1]", "invalid JSON: expected a string, found ']'", kind: .syntax, offset: 25)),
        (#"{"action":"x","resource":{"type":"app"}} x"#,
         RequestError(field: "", "invalid JSON: unexpected 'x' after the request", kind: .syntax, offset: 41)),
        (#"{"action":"x","resource":{"type":"app"}"#, RequestError(field: "", "invalid JSON: unterminated object", kind: .syntax, offset: 39)),
    ]

    @Test func brokenObjectsAreRefusedAsBefore() {
        for (text, error) in Self.refused {
            #expect(throws: error, "\(text)") { try Request(json: text) }
        }
        let deep = #"{"action":"x","resource":{"type":"app","attributes":"# + String(repeating: #"{"a":"#, count: 30) + "{}"
            + String(repeating: "}", count: 32)
        #expect(throws: RequestError(field: "resource.attributes" + String(repeating: ".a", count: 30), "nesting deeper than 32 levels",
                                     kind: .tooDeep, offset: 52 + 5 * 30)) { try Request(json: deep) }
    }
}
