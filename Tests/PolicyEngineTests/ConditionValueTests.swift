import Foundation
import PolicyEngine
import PolicyModel
import Testing

@Suite struct ConditionValueTests {
    @Test(arguments: [
        ("5m", 300.0 as Double?), ("1h30m", 5400), ("250ms", 0.25), ("1.5h", 5400), ("-1s", -1), ("0s", 0), ("1h1m1s1ms", 3661.001),
        ("", nil), ("5", nil), ("m", nil), ("5x", nil), ("5m-1s", nil), ("1..5s", nil), (String(repeating: "1h", count: 40), nil),
    ])
    func durationText(text: String, seconds: Double?) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test func conversionFollowsTheDeclaredType() {
        #expect(ConditionType.int.convert(.double(3)) == .int(3))
        #expect(ConditionType.int.convert(.double(3.5)) == nil)
        #expect(ConditionType.int.convert(.double(.infinity)) == nil)
        #expect(ConditionType.int.convert(.double(.nan)) == nil)
        #expect(ConditionType.int.convert(.double(9.3e18)) == nil)
        #expect(ConditionType.double.convert(.int(2)) == .double(2))
        #expect(ConditionType.bool.convert(.null) == nil)
        #expect(ConditionType.enumeration(["a", "b"]).convert(.string("b")) == .string("b"))
        #expect(ConditionType.enumeration(["a", "b"]).convert(.string("c")) == nil)
        #expect(ConditionType.timestamp.convert(.string("2026-11-22T12:00:00Z")) == .timestamp(1_795_348_800))
        #expect(ConditionType.timestamp.convert(.string("2026-11-22")) == nil)
        #expect(ConditionType.duration.convert(.string("2m")) == .duration(120))
        #expect(ConditionType.list(.int).convert(.list([.int(1), .double(2)])) == .list(.values([.int(1), .double(2)], .int)))
        #expect(ConditionType.list(.int).convert(.list([.int(1), .string("2")])) == nil)
        #expect(ConditionType.list(.int).convert(.int(1)) == nil)
    }

    @Test func stringTestsCompareScalarsExactly() {
        #expect(ConditionValue.test(.startsWith, "héllo", "hé"))
        #expect(!ConditionValue.test(.startsWith, "he\u{301}llo", "hé"))  // no normalisation
        #expect(ConditionValue.test(.endsWith, "abc", "bc"))
        #expect(!ConditionValue.test(.endsWith, "c", "bc"))
        #expect(ConditionValue.test(.contains, "a🎉b", "🎉"))
        #expect(ConditionValue.test(.contains, "", ""))
        #expect(!ConditionValue.test(.contains, "ab", "abc"))
    }

    @Test func handBuiltNodesEvaluateWithoutACompiler() {
        let input = EvaluationInput(
            request: Request(subject: Subject(id: "u1", roles: ["admin"]), action: "x", resource: Resource(type: "doc", members: ["u1": "owner"])),
            now: Date(timeIntervalSince1970: 100), effectiveTier: "pro", signedIn: true, resourceRole: "owner")
        let condition = CompiledCondition(
            source: "…", location: SourceLocation(file: "f", line: 1, column: 1),
            root: .and(.inStrings(.field(.subjectTier), ["pro", "team"]), .contains(element: .field(.subjectId), container: .field(.resourceMembers))),
            readPaths: [])
        #expect(condition.evaluate(input) == true)
        #expect(condition.constantValue == nil)
        let absent = CompiledCondition(source: "", location: condition.location, root: .compare(.equal, .field(.resourceOwnerId), .constant(.string("u1"))),
                                       readPaths: [])
        #expect(absent.evaluate(input) == nil)
        #expect(ConditionNode.compare(.less, .field(.now), .constant(.timestamp(101))).evaluate(input) == .bool(true))
        #expect(ConditionNode.add(.constant(.int(.max)), .constant(.int(1))).evaluate(input) == nil)
    }
}
