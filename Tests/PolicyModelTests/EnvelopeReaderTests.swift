import PolicyModel
import Testing

/// The batch and check envelopes through the strict byte reader: an item reads as it would alone, errors
/// name the path from the body's top and the byte offset in the body, the envelope's own keys are strict.
@Suite struct EnvelopeReaderTests {
    static let reader = RequestReader()
    static let free = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let items = [
        free, #"{"action": 5, "resource": {"type": "app"}}"#, #" {"action": "a,]}", "resource": {"type": "x\"]"}} "#,
        #"{"action": "x", "action": "y", "resource": {"type": "app"}}"#, "7", "123456789012345678901234567890", "1e400",
        #"{"action": "x", "resource": {"type": "app", "attributes": {"n": 9223332036854777777.7}}}"#, #"{"action": "x", "resource": {"type": "app"}, "extra": [1, {"a": 2}]}"#,
    ]

    /// Every item answers what `Request(json:)` answers for its bytes alone: the request, or its error under
    /// `requests[i]` with the offset moved by where the item starts.
    @Test func eachItemReadsAsItWouldAlone() throws {
        let prefix = #"{"requests": ["#
        let body = prefix + Self.items.joined(separator: ",") + "]}"
        let answers = try Self.reader.readBatch(Array(body.utf8), maxItems: 100)
        try #require(answers.count == Self.items.count)
        var start = prefix.utf8.count
        for (i, (item, answer)) in zip(Self.items, answers).enumerated() {
            let alone = Result { () throws(RequestError) in try Request(json: item) }
            switch (alone, answer) {
            case (.success(let a), .success(let b)): #expect(a == b)
            case (.failure(let a), .failure(let b)):
                #expect(b.kind == a.kind && b.message == a.message, "item \(i)")
                #expect(b.field == "requests[\(i)]" + (a.field.isEmpty ? "" : "." + a.field))
                #expect(b.offset == a.offset.map { $0 + start }, "item \(i)")
            default: Issue.record("item \(i): alone \(alone), in the batch \(answer)")
            }
            start += item.utf8.count + 1
        }
        #expect(answers.filter { if case .success = $0 { true } else { false } }.count == 2)
    }

    /// Spacing, an escaped key and the order of nothing else change nothing; an empty list is no items.
    @Test func theEnvelopesSpellingDoesNotMatter() throws {
        let exact = try Self.reader.readBatch(Array(#"{"requests":[\#(Self.free)]}"#.utf8), maxItems: 10)
        let spaced = try Self.reader.readBatch(Array(" {\n \"\\u0072equests\" :\t[ \(Self.free) ] } ".utf8), maxItems: 10)
        #expect(try exact.map { try $0.get() } == spaced.map { try $0.get() })
        #expect(try Self.reader.readBatch(Array(#"{"requests": []}"#.utf8), maxItems: 10).isEmpty)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var kind: RequestError.Kind
        var field: String
        var offset: Int
        var testDescription: String { name }
        init(_ name: String, _ body: String, _ kind: RequestError.Kind, _ field: String, at offset: Int) {
            (self.name, self.body, self.kind, self.field, self.offset) = (name, body, kind, field, offset)
        }
    }

    static let batchRefusals: [Refusal] = [
        Refusal("unknown envelope key", #"{"requests": [], "requests2": 1}"#, .unknownField, "requests2", at: 17),
        Refusal("duplicate requests", #"{"requests": [], "requests": []}"#, .duplicateKey, "requests", at: 17),
        Refusal("no requests", #"{}"#, .missingField, "requests", at: 1),
        Refusal("requests not a list", #"{"requests": {}}"#, .wrongType, "requests", at: 13),
        Refusal("not an object", #"[]"#, .wrongType, "", at: 0),
        Refusal("too many items", #"{"requests": [1, 2, 3, 4]}"#, .invalidValue, "requests", at: 23),
        Refusal("an item that is not JSON makes the body not JSON", #"{"requests": [{"action": }]}"#, .syntax, "requests[0].action", at: 25),
        Refusal(
            "an item nested too deep", #"{"requests": [{"action": "x", "resource": {"type": "a", "attributes": {"d": \#(String(repeating: "[", count: 40))}}}]}"#,
            .tooDeep, "requests[0].resource.attributes.d[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]", at: 105),
        Refusal("an unterminated list", #"{"requests": [{"action": "x", "resource": {"type": "a"}}"#, .syntax, "requests", at: 56),
        Refusal("text after the body", #"{"requests": []} x"#, .syntax, "", at: 17),
        Refusal("a control character in an item", "{\"requests\": [\"\u{1}\"]}", .syntax, "requests[0]", at: 15),
    ]

    @Test(arguments: batchRefusals) func aBatchBodyIsRefused(_ r: Refusal) throws {
        let error = try #require(throws: RequestError.self) { try Self.reader.readBatch(Array(r.body.utf8), maxItems: 3) }
        #expect(error.kind == r.kind)
        #expect(error.field == r.field)
        #expect(error.offset == r.offset)
    }

    @Test func aCheckReadsTheSharedRequestAndItsActions() throws {
        let body = #"{"subject": {"id": "u1", "tier": "free"}, "actions": ["a", "b"], "resource": {"type": "app", "usage": {"n": 2}}, "context": {"now": "2026-11-22T12:00:00Z"}}"#
        let check = try Self.reader.readCheck(Array(body.utf8), maxActions: 10)
        #expect(check.actions == ["a", "b"])
        let alone = try Request(
            json: #"{"subject": {"id": "u1", "tier": "free"}, "action": "", "resource": {"type": "app", "usage": {"n": 2}}, "context": {"now": "2026-11-22T12:00:00Z"}}"#)
        #expect(check.request == alone)
    }

    static let checkRefusals: [Refusal] = [
        Refusal("repeated action", #"{"resource": {"type": "app"}, "actions": ["a", "a"]}"#, .invalidValue, "actions[1]", at: 47),
        Refusal("no actions", #"{"resource": {"type": "app"}, "actions": []}"#, .invalidValue, "actions", at: 41),
        Refusal("actions missing", #"{"resource": {"type": "app"}}"#, .missingField, "actions", at: 28),
        Refusal("resource missing", #"{"actions": ["a"]}"#, .missingField, "resource", at: 17),
        Refusal("an action that is not a string", #"{"resource": {"type": "app"}, "actions": ["a", 5]}"#, .wrongType, "actions[1]", at: 47),
        Refusal("a single action field", #"{"resource": {"type": "app"}, "action": "a"}"#, .unknownField, "action", at: 30),
        Refusal("a subject field", #"{"subject": {"tier": 1}, "resource": {"type": "app"}, "actions": ["a"]}"#, .wrongType, "subject.tier", at: 21),
        Refusal("duplicate resource", #"{"resource": {"type": "app"}, "resource": {"type": "app"}, "actions": ["a"]}"#, .duplicateKey, "resource", at: 30),
        Refusal("too many actions", #"{"resource": {"type": "app"}, "actions": ["a", "b", "c", "d"]}"#, .invalidValue, "actions", at: 57),
    ]

    @Test(arguments: checkRefusals) func aCheckBodyIsRefused(_ r: Refusal) throws {
        let error = try #require(throws: RequestError.self) { try Self.reader.readCheck(Array(r.body.utf8), maxActions: 3) }
        #expect(error.kind == r.kind)
        #expect(error.field == r.field)
        #expect(error.offset == r.offset)
    }

    /// A body past the limit is refused before anything is read, as a single request is.
    @Test func theSizeLimitHoldsForEnvelopes() throws {
        let small = RequestReader(limits: RequestLimits(maxBytes: 16))
        let error = try #require(throws: RequestError.self) { try small.readBatch(Array(#"{"requests": [], "x": 1}"#.utf8), maxItems: 3) }
        #expect(error.kind == .tooLarge)
        #expect(try #require(throws: RequestError.self) { try small.readCheck(Array(#"{"resource": {"type": "app"}}"#.utf8), maxActions: 3) }.kind == .tooLarge)
    }
}
