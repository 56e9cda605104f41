import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax
import Testing

func condition(_ text: String) throws -> CompiledCondition {
    switch compile(text) {
    case .success(let c): return c
    case .failure(let d):
        Issue.record("\(text): \(d.diagnostics.map(\.message))")
        throw d
    }
}

func evaluate(_ text: String, _ input: EvaluationInput = makeInput()) throws -> Bool? {
    try condition(text).evaluate(input)
}

@Suite struct ConditionEvaluationTests {
    @Test(arguments: [
        ("subject.signedIn", true as Bool?),
        ("!subject.signedIn", false),
        ("subject.id == 'u1'", true),
        ("subject.id != 'u1'", false),
        ("subject.tier == 'pro'", true),
        ("subject.tier in ['free', 'team']", false),
        ("'customer' in subject.roles", true),
        ("'admin' in subject.roles", false),
        ("subject.auth.method in ['pin', 'biometric']", true),
        ("resource.type == 'project'", true),
        ("resource.ownerId == subject.id", false),
        ("resource.role == 'editor'", true),
        ("subject.id in resource.members", true),
        ("'u9' in resource.members", false),
        ("resource.members[subject.id] == 'editor'", true),
        ("resource.usage.sources < 50", true),
        ("resource.usage.sources <= 49", true),
        ("resource.usage.sources > 49", false),
        ("resource.usage.sources >= 49", true),
        ("resource.usage.missing == 0", true),
        ("resource.usage.sources + 1 == 50", true),
        ("resource.usage.sources - 50 == -1", true),
        ("-resource.usage.sources == -49", true),
        ("resource.usage.sources == 49.0", true),
        ("resource.usage.sources < 49.5", true),
        ("1.5 + 1 == 2.5", true),
        ("'abc' < 'abd'", true),
        ("subject.id.startsWith('u')", true),
        ("subject.id.endsWith('1')", true),
        ("resource.type.contains('oje')", true),
        ("resource.type.contains('')", true),
        ("'héllo'.contains('é')", true),
        ("size(subject.roles) == 1", true),
        ("subject.roles.size() == 1", true),
        ("size('héllo') == 5", true),
        ("size(resource.members) == 1", true),
        ("subject.roles[0] == 'customer'", true),
        ("[1, 2] == [1, 2]", true),
        ("[subject.id, 'x'] == ['u1', 'x']", true),
        ("subject.id in ['x', resource.ownerId]", false),
        ("subject.id in [resource.ownerId, 'u1']", true),
        ("null == null", true),
        ("true == (1 < 2)", true),
        ("context.now > subject.auth.verifiedAt", true),
        ("context.now == timestamp('2026-11-22T12:00:00Z')", true),
        ("context.now - duration('1h') < timestamp('2026-11-22T11:00:01Z')", true),
        ("duration('1h30m') == duration('90m')", true),
        ("duration('1.5h') == duration('5400s')", true),
        ("duration('250ms') + duration('750ms') == duration('1s')", true),
        ("-duration('1m') < duration('0s')", true),
        ("duration('1m') + context.now > context.now", true),
        ("(subject.signedIn || false) && !(resource.usage.sources > 100)", true),
    ])
    func operators(text: String, expected: Bool?) throws {
        #expect(try evaluate(text) == expected)
    }

    @Test func andOrFollowCEL() throws {
        // nickname is declared but absent: reading it is an error.
        let absent = "subject.attributes.nickname == 'x'"
        #expect(try evaluate("false && \(absent)") == false)
        #expect(try evaluate("\(absent) && false") == false)
        #expect(try evaluate("true && \(absent)") == nil)
        #expect(try evaluate("\(absent) && true") == nil)
        #expect(try evaluate("true || \(absent)") == true)
        #expect(try evaluate("\(absent) || true") == true)
        #expect(try evaluate("false || \(absent)") == nil)
        #expect(try evaluate("\(absent) || false") == nil)
        #expect(try evaluate("!(\(absent))") == nil)
        #expect(try evaluate("\(absent) || \(absent)") == nil)
        // An error inside a list literal makes the membership test an error, even if another item matches.
        #expect(try evaluate("'u1' in [subject.attributes.nickname, 'u1']") == nil)
    }

    @Test func hasTestsPresence() throws {
        let signedOut = makeInput(subject: Subject(), signedIn: false, role: nil)
        #expect(try evaluate("has(subject.id)") == true)
        #expect(try evaluate("has(subject.id)", signedOut) == false)
        #expect(try evaluate("has(subject.auth.method)", signedOut) == false)
        #expect(try evaluate("has(subject.auth.verifiedAt)") == true)
        #expect(try evaluate("has(subject.subscriptionExpiry)") == false)
        #expect(try evaluate("has(resource.role)", signedOut) == false)
        #expect(try evaluate("has(resource.usage.sources)") == true)
        #expect(try evaluate("has(resource.usage.other)") == false)
        let withNick = makeInput(subject: Subject(id: "u1", attributes: ["nickname": .string("n")]))
        let nullNick = makeInput(subject: Subject(id: "u1", attributes: ["nickname": .null]))
        let wrongNick = makeInput(subject: Subject(id: "u1", attributes: ["nickname": .int(3)]))
        #expect(try evaluate("has(subject.attributes.nickname)") == false)
        #expect(try evaluate("has(subject.attributes.nickname)", withNick) == true)
        #expect(try evaluate("has(subject.attributes.nickname)", nullNick) == false)
        #expect(try evaluate("has(subject.attributes.nickname)", wrongNick) == true)
        #expect(try evaluate("has(subject.attributes.nickname) && subject.attributes.nickname == 'n'") == false)
        #expect(try evaluate("!has(subject.attributes.nickname) || subject.attributes.nickname == 'n'", withNick) == true)
    }

    @Test func absentValuesAreErrors() throws {
        let signedOut = makeInput(subject: Subject(), resource: Resource(type: "project"), signedIn: false, role: nil)
        #expect(try evaluate("subject.id == 'u1'", signedOut) == nil)
        #expect(try evaluate("subject.id != 'u1'", signedOut) == nil)
        #expect(try evaluate("subject.auth.method == 'pin'", signedOut) == nil)
        #expect(try evaluate("resource.ownerId == 'x'", signedOut) == nil)
        #expect(try evaluate("resource.role == 'editor'", signedOut) == nil)
        #expect(try evaluate("subject.subscriptionExpiry > context.now") == nil)
        #expect(try evaluate("subject.attributes.analytics") == nil)
        #expect(try evaluate("resource.attributes.amount < 500") == nil)
        #expect(try evaluate("resource.members['nobody'] == 'editor'") == nil)
        #expect(try evaluate("subject.roles[1] == 'customer'") == nil)
        #expect(try evaluate("subject.roles[-1] == 'customer'") == nil)
        #expect(try evaluate("resource.attributes.amount < 500",
                             makeInput(resource: Resource(type: "project", attributes: ["amount": .null]))) == nil)
    }

    @Test func requestValuesConvertToTheDeclaredType() throws {
        func subject(_ attributes: [String: Value]) -> EvaluationInput { makeInput(subject: Subject(id: "u1", attributes: attributes)) }
        func resource(_ attributes: [String: Value]) -> EvaluationInput { makeInput(resource: Resource(type: "project", attributes: attributes)) }
        #expect(try evaluate("subject.attributes.birthYear == 1990", subject(["birthYear": .int(1990)])) == true)
        #expect(try evaluate("subject.attributes.birthYear == 1990", subject(["birthYear": .double(1990)])) == true)
        #expect(try evaluate("subject.attributes.birthYear == 1990", subject(["birthYear": .double(1990.5)])) == nil)
        #expect(try evaluate("subject.attributes.birthYear == 1990", subject(["birthYear": .string("1990")])) == nil)
        #expect(try evaluate("subject.attributes.birthYear == 1990", subject(["birthYear": .double(1e300)])) == nil)
        #expect(try evaluate("subject.attributes.score > 2.5", subject(["score": .int(3)])) == true)
        #expect(try evaluate("subject.attributes.analytics", subject(["analytics": .string("true")])) == nil)
        #expect(try evaluate("subject.attributes.dataSharing == 'full'", subject(["dataSharing": .string("full")])) == true)
        #expect(try evaluate("subject.attributes.dataSharing != 'full'", subject(["dataSharing": .string("maximal")])) == nil)
        #expect(try evaluate("subject.attributes.trustedUntil > context.now", subject(["trustedUntil": .string("2027-01-01T00:00:00Z")])) == true)
        #expect(try evaluate("subject.attributes.trustedUntil > context.now", subject(["trustedUntil": .string("next year")])) == nil)
        #expect(try evaluate("subject.attributes.trustedUntil > context.now", subject(["trustedUntil": .int(5)])) == nil)
        #expect(try evaluate("'a' in resource.attributes.tags", resource(["tags": .list([.string("b"), .string("a")])])) == true)
        #expect(try evaluate("'a' in resource.attributes.tags", resource(["tags": .list([.string("a"), .int(1)])])) == nil)
        #expect(try evaluate("resource.attributes.tags == []", resource(["tags": .list([])])) == true)
        #expect(try evaluate("resource.attributes.matrix[1][0] == 3", resource(["matrix": .list([.list([]), .list([.int(3)])])])) == true)
        #expect(try evaluate("resource.attributes.matrix[1][0] == 3", resource(["matrix": .list([.list([.string("x")])])])) == nil)
        let window = { (v: Value) in makeInput(context: Context(attributes: ["window": v])) }
        #expect(try evaluate("context.attributes.window == duration('90s')", window(.string("1m30s"))) == true)
        #expect(try evaluate("context.attributes.window == duration('90s')", window(.int(90))) == true)
        #expect(try evaluate("context.attributes.window == duration('90s')", window(.string("soon"))) == nil)
    }

    /// Freshness: `now - verifiedAt < 5m` holds strictly inside the window; `<=` includes its edge.
    @Test func freshnessBoundaries() throws {
        let strict = try condition("context.now - subject.auth.verifiedAt < duration('5m')")
        let inclusive = try condition("context.now - subject.auth.verifiedAt <= duration('5m')")
        func verified(secondsAgo: Double) -> EvaluationInput {
            makeInput(subject: Subject(id: "u1", auth: Authentication(method: "pin", verifiedAt: t0 - secondsAgo)))
        }
        #expect(strict.evaluate(verified(secondsAgo: 299)) == true)
        #expect(strict.evaluate(verified(secondsAgo: 299.999)) == true)
        #expect(strict.evaluate(verified(secondsAgo: 300)) == false)
        #expect(inclusive.evaluate(verified(secondsAgo: 300)) == true)
        #expect(inclusive.evaluate(verified(secondsAgo: 300.001)) == false)
        #expect(strict.evaluate(makeInput(subject: Subject(id: "u1", auth: Authentication(method: "pin")))) == nil)
        let added = try condition("subject.auth.verifiedAt + duration('5m') > context.now")
        #expect(added.evaluate(verified(secondsAgo: 299)) == true)
        #expect(added.evaluate(verified(secondsAgo: 300)) == false)
    }

    @Test func overflowIsAnErrorNotATrap() throws {
        let big = makeInput(resource: Resource(type: "project", usage: ["a": Int.max, "b": Int.min, "one": 1]))
        #expect(try evaluate("resource.usage.a + resource.usage.one > 0", big) == nil)
        #expect(try evaluate("resource.usage.b - resource.usage.one < 0", big) == nil)
        #expect(try evaluate("-resource.usage.b > 0", big) == nil)
        #expect(try evaluate("resource.usage.a - resource.usage.one > 0", big) == true)
        #expect(try evaluate("resource.usage.one + 9223372036854775807 > 0", big) == nil)
        // A constant that overflows is not folded: it stays an error at decide time.
        let constant = try condition("9223372036854775807 + 1 > 0")
        #expect(constant.constantValue == nil)
        #expect(constant.evaluate(makeInput()) == nil)
        #expect(try evaluate("-9223372036854775808 < 0") == true)
        #expect(try evaluate("1e308 + 1e308 > 0.0") == nil)
    }

    @Test(arguments: [
        ("1 < 2", true as Bool?),
        ("subject.signedIn && false", false),
        ("false && subject.signedIn", false),
        ("subject.signedIn || true", true),
        ("subject.signedIn || 1 == 1", true),
        ("'a' in ['a', 'b']", true),
        ("size('héllo') == 5", true),
        ("duration('1h') == duration('60m')", true),
        ("timestamp('2026-01-01T00:00:00Z') < timestamp('2025-01-01T00:00:00Z')", false),
        ("!(1 == 1)", false),
        ("'abc'.startsWith('a')", true),
        ("subject.signedIn", nil),
        ("subject.signedIn && true", nil),
        ("has(subject.id)", nil),
    ])
    func constantsFold(text: String, expected: Bool?) throws {
        let c = try condition(text)
        #expect(c.constantValue == expected)
        if let expected { #expect(c.evaluate(makeInput()) == expected) }
    }

    @Test func readPaths() throws {
        let amount = try condition("resource.attributes.amount < 500 && 10 <= resource.usage.sources")
        #expect(amount.readPaths == ["resource.attributes.amount", "resource.usage.sources"])

        let time = try condition("context.now < timestamp('2026-11-22T12:00:00Z') && context.now - subject.auth.verifiedAt < duration('5m')")
        #expect(time.readPaths == ["context.now", "subject.auth.verifiedAt"])

        let misc = try condition("subject.tier != 'free' && subject.signedIn == true && has(resource.ownerId) && resource.members[subject.id] == 'owner'")
        #expect(misc.readPaths == ["subject.tier", "subject.signedIn", "resource.ownerId", "resource.members", "subject.id"])
        #expect(misc.source.hasPrefix("subject.tier"))
        #expect(misc.location == conditionOrigin)
    }
}
