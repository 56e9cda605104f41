import Foundation
import PolicyEngine
import PolicyModel
import Testing

/// `ConsentTest` is `true` exactly when the condition's tree evaluates to `true`, for every shape it compiles and every
/// kind of value an attribute can hold; other shapes get no test.
@Suite struct ConsentTestTests {
    static let values: [Value?] = [
        nil, .null, .bool(true), .bool(false), .string("none"), .string("minimal"), .string("standard"), .int(1), .double(1),
        .list([.bool(true)]),
    ]

    static let shapes: [ConditionNode] = {
        let a = ConditionNode.attribute(.subject, "a", .bool)
        let d = ConditionNode.attribute(.subject, "d", .enumeration(["none", "minimal", "standard"]))
        let s = ConditionNode.attribute(.resource, "s", .string)
        let hasA = ConditionNode.has(.attribute(.subject, "a"))
        let hasD = ConditionNode.has(.attribute(.subject, "d"))
        return [
            .and(hasA, a),
            a,
            hasA,
            .and(.and(.and(hasA, a), hasD), .compare(.notEqual, d, .constant(.string("none")))),
            .compare(.equal, d, .constant(.string("minimal"))),
            .compare(.notEqual, .constant(.string("none")), d),
            .and(hasD, .compare(.equal, s, .constant(.string("none")))),
            .and(a, .constant(.bool(true))),
            .constant(.bool(false)),
            .and(hasA, .has(.attribute(.resource, "s"))),
            // Never true: not a bool, not a string.
            .and(hasD, d),
            .compare(.notEqual, a, .constant(.string("none"))),
        ]
    }()

    @Test func agreesWithTheTreeOnEveryValue() {
        for (index, shape) in Self.shapes.enumerated() {
            guard let test = ConsentTest(shape) else {
                Issue.record("shape \(index) compiles to no test")
                continue
            }
            for a in Self.values {
                for d in Self.values {
                    for s in Self.values {
                        var subject = Subject(id: "u1")
                        if let a { subject.attributes["a"] = a }
                        if let d { subject.attributes["d"] = d }
                        var resource = Resource(type: "app")
                        if let s { resource.attributes["s"] = s }
                        let request = Request(subject: subject, action: "x", resource: resource)
                        let input = EvaluationInput(request: request, now: Date(timeIntervalSince1970: 0), effectiveTier: "free", signedIn: true, resourceRole: nil)
                        #expect(test.holds(request) == (shape.evaluate(input) == .bool(true)), "shape \(index), a \(String(describing: a)), d \(String(describing: d)), s \(String(describing: s))")
                    }
                }
            }
        }
    }

    @Test func otherShapesGetNoTest() {
        let a = ConditionNode.attribute(.subject, "a", .bool)
        #expect(ConsentTest(.or(a, .has(.attribute(.subject, "a")))) == nil)
        #expect(ConsentTest(.and(a, .not(a))) == nil)
        #expect(ConsentTest(.compare(.less, .attribute(.subject, "n", .int), .constant(.int(3)))) == nil)
        #expect(ConsentTest(.compare(.equal, .attribute(.subject, "n", .int), .constant(.int(3)))) == nil)
        #expect(ConsentTest(.field(.subjectSignedIn)) == nil)
    }
}
