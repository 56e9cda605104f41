import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax
import Testing
import GatehouseReferenceModel
import GatehouseTestSupport

typealias Rng = SeededRandom

/// Generates condition text of a requested type from a small grammar; most of it type-checks.
struct ExpressionGenerator {
    enum Kind { case bool, int, double, string, timestamp, duration, strings, ints }
    var rng: Rng

    static let leaves: [Kind: [String]] = [
        .bool: ["subject.signedIn", "subject.attributes.analytics", "true", "false", "has(subject.id)", "has(subject.attributes.nickname)",
                "has(resource.attributes.amount)", "has(resource.role)", "has(resource.usage.big)", "has(subject.auth.verifiedAt)"],
        .int: ["0", "1", "-3", "49", "9223372036854775807", "-9223372036854775808", "resource.usage.sources", "resource.usage.big",
               "subject.attributes.birthYear", "resource.attributes.count"],
        .double: ["1.5", "0.0", "-2.25", "1e308", "49.0", "resource.attributes.amount", "subject.attributes.score"],
        .string: ["'pro'", "'free'", "'u1'", "'editor'", "'pin'", "'project'", "''", "'é'", "'u'", "subject.id", "subject.tier",
                  "subject.auth.method", "resource.type", "resource.ownerId", "resource.role", "subject.attributes.nickname",
                  "subject.attributes.dataSharing", "resource.members[subject.id]", "subject.roles[0]"],
        .timestamp: ["context.now", "subject.auth.verifiedAt", "subject.subscriptionExpiry", "timestamp('2026-11-22T12:00:00Z')",
                     "resource.attributes.deadline", "subject.attributes.trustedUntil"],
        .duration: ["duration('5m')", "duration('1h30m')", "duration('-1s')", "duration('0s')", "context.attributes.window"],
        .strings: ["subject.roles", "resource.attributes.tags", "['pro', 'free']", "[]", "[subject.id, 'x']", "subject.attributes.groups"],
        .ints: ["[1, 2, 3]", "[resource.usage.sources, 0]", "[]"],
    ]

    mutating func make(_ kind: Kind, _ depth: Int) -> String {
        if depth == 0 || rng.chance(25) { return rng.pick(Self.leaves[kind] ?? []) }
        let d = depth - 1
        let order = ["==", "!=", "<", "<=", ">", ">="]
        switch kind {
        case .bool:
            switch rng.below(14) {
            case 0: return "!" + make(.bool, d)
            case 1: return "(\(make(.bool, d)) && \(make(.bool, d)))"
            case 2: return "(\(make(.bool, d)) || \(make(.bool, d)))"
            case 3: return "(\(make(.int, d)) \(rng.pick(order)) \(make(.int, d)))"
            case 4: return "(\(make(.double, d)) \(rng.pick(order)) \(make(.int, d)))"
            case 5: return "(\(make(.string, d)) \(rng.pick(order)) \(make(.string, d)))"
            case 6: return "(\(make(.timestamp, d)) \(rng.pick(order)) \(make(.timestamp, d)))"
            case 7: return "(\(make(.duration, d)) \(rng.pick(order)) \(make(.duration, d)))"
            case 8: return "(\(make(.string, d)) in \(make(.strings, d)))"
            case 9: return "(\(make(.int, d)) in \(make(.ints, d)))"
            case 10: return "(\(make(.string, d)) in resource.members)"
            case 11: return "\(make(.string, d)).\(rng.pick(["startsWith", "endsWith", "contains"]))(\(make(.string, d)))"
            case 12: return "(\(make(.bool, d)) \(rng.pick(["==", "!="])) \(make(.bool, d)))"
            default: return "(\(make(.strings, d)) \(rng.pick(["==", "!="])) \(make(.strings, d)))"
            }
        case .int:
            switch rng.below(5) {
            case 0: return "(\(make(.int, d)) + \(make(.int, d)))"
            case 1: return "(\(make(.int, d)) - \(make(.int, d)))"
            case 2: return "-(\(make(.int, d)))"
            case 3: return "size(\(rng.chance(50) ? make(.string, d) : make(.strings, d)))"
            default: return "\(make(.ints, d))[\(make(.int, d))]"
            }
        case .double:
            switch rng.below(3) {
            case 0: return "(\(make(.double, d)) + \(make(.double, d)))"
            case 1: return "(\(make(.double, d)) - \(make(.int, d)))"
            default: return "-(\(make(.double, d)))"
            }
        case .string:
            return "\(make(.strings, d))[\(make(.int, d))]"
        case .timestamp:
            switch rng.below(3) {
            case 0: return "(\(make(.timestamp, d)) + \(make(.duration, d)))"
            case 1: return "(\(make(.timestamp, d)) - \(make(.duration, d)))"
            default: return "(\(make(.duration, d)) + \(make(.timestamp, d)))"
            }
        case .duration:
            switch rng.below(4) {
            case 0: return "(\(make(.timestamp, d)) - \(make(.timestamp, d)))"
            case 1: return "(\(make(.duration, d)) + \(make(.duration, d)))"
            case 2: return "(\(make(.duration, d)) - \(make(.duration, d)))"
            default: return "-(\(make(.duration, d)))"
            }
        case .strings:
            return "[\(make(.string, d)), \(make(.string, d))]"
        case .ints:
            return "[\(make(.int, d)), \(make(.int, d))]"
        }
    }

    mutating func input() -> EvaluationInput {
        func maybe<T>(_ value: T, _ percent: Int = 70) -> T? { rng.chance(percent) ? value : nil }
        var subjectAttributes: [String: Value] = [:]
        let subjectPool: [String: [Value]] = [
            "analytics": [.bool(true), .bool(false), .null, .string("yes")],
            "birthYear": [.int(1990), .double(1990), .double(1.5), .int(Int.max), .string("x")],
            "score": [.double(2.5), .int(3), .double(-1e308), .bool(true)],
            "nickname": [.string("u"), .string("é"), .string(""), .null, .int(1)],
            "dataSharing": [.string("minimal"), .string("full"), .string("maximal")],
            "trustedUntil": [.string("2026-11-22T12:00:00Z"), .string("2027-01-01T00:00:00.5Z"), .string("soon")],
            "groups": [.list([.string("pro"), .string("u1")]), .list([]), .list([.int(1)])],
        ]
        for (key, pool) in subjectPool where rng.chance(70) { subjectAttributes[key] = rng.pick(pool) }
        var resourceAttributes: [String: Value] = [:]
        let resourcePool: [String: [Value]] = [
            "amount": [.double(499.5), .int(500), .double(1e308), .string("500")],
            "count": [.int(0), .int(-5), .int(Int.min), .double(2)],
            "tags": [.list([.string("pro")]), .list([.string("free"), .string("x")]), .string("pro")],
            "deadline": [.string("2026-11-22T12:05:00Z"), .string("2025-01-01T00:00:00Z"), .int(3)],
        ]
        for (key, pool) in resourcePool where rng.chance(70) { resourceAttributes[key] = rng.pick(pool) }
        var contextAttributes: [String: Value] = [:]
        if rng.chance(70) { contextAttributes["window"] = rng.pick([.string("5m"), .int(300), .string("1h"), .string("bad")]) }
        let method = rng.pick(["pin", "apple", "biometric"])
        let auth = maybe(Authentication(method: method, verifiedAt: maybe(t0 - Double(rng.below(601)))))
        let subject = Subject(
            id: rng.pick([nil, "u1", "u2", ""]), tier: "pro", subscriptionExpiry: maybe(t0 + Double(rng.below(7200)) - 3600, 50),
            roles: ["customer", "admin", "pro"].filter { _ in rng.chance(50) }, auth: auth, attributes: subjectAttributes)
        var usage: [String: Int] = [:]
        if rng.chance(80) { usage["sources"] = rng.pick([0, 49, 50]) }
        if rng.chance(50) { usage["big"] = rng.pick([Int.max, Int.min, 5]) }
        let resource = Resource(
            type: rng.pick(["project", "document"]), id: maybe("p1"), ownerId: rng.pick([nil, "u1", "u2"]),
            members: rng.chance(50) ? ["u1": "editor"] : ["u2": "viewer"], usage: usage, attributes: resourceAttributes)
        return EvaluationInput(
            request: Request(subject: subject, action: "a", resource: resource, context: Context(attributes: contextAttributes)),
            now: t0 + Double(rng.below(600)) - 300, effectiveTier: rng.pick(["pro", "free"]), signedIn: rng.chance(50),
            resourceRole: rng.pick([nil, "editor", "owner"]))
    }
}

@Suite(.computeBound) struct DifferentialTests {
    @Test func compiledConditionsAgreeWithTheReferenceEvaluator() throws {
        var generator = ExpressionGenerator(rng: Rng(state: 20261122))
        let schema = testSchema()
        var compiled = 0, outcomes = [String: Int]()
        for _ in 0..<4000 {
            let text = generator.make(.bool, 4)
            guard case .success(let condition) = ExpressionChecker.compile(text, origin: conditionOrigin, schema: schema),
                  case .success(let tree) = ExpressionParser.parse(text, origin: conditionOrigin)
            else { continue }
            compiled += 1
            for _ in 0..<3 {
                let input = generator.input()
                let expected = ReferenceEvaluator(input: input, schema: schema).evaluate(tree)
                let actual = condition.evaluate(input)
                #expect(actual == expected, "\(text)")
                if let constant = condition.constantValue { #expect(constant == expected, "constant \(text)") }
                outcomes[expected.map { "\($0)" } ?? "error", default: 0] += 1
                if actual != expected { return }
            }
        }
        // The generator must exercise every outcome, or the comparison proves little.
        #expect(compiled > 2000)
        #expect(outcomes["true", default: 0] > 1000 && outcomes["false", default: 0] > 1000 && outcomes["error", default: 0] > 1000,
                "\(outcomes)")
    }
}
