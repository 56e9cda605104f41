import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax

/// libFuzzer entry: bytes -> condition text -> ExpressionParser.parse and ExpressionChecker.compile
/// against a fixed schema, then evaluation on a few requests. A trap, a hang, a condition that folds
/// to a constant but evaluates otherwise, or a checker that accepts what the parser refuses is a finding.
///
/// A first byte below 8 is not text: it picks the continuation column for multi-line text (as in a
/// YAML block scalar), so seed files stay plain conditions.
public func fuzzExpression(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let control = size > 0 && data[0] < 8
    let continuation = control ? Int(data[0]) + 1 : 9
    let start = control ? 1 : 0
    let text = String(decoding: UnsafeBufferPointer(start: data + start, count: size - start), as: UTF8.self)
    let origin = SourceLocation(file: "fuzz.yaml", line: 3, column: 9)

    let parsed = ExpressionParser.parse(text, origin: origin, continuationColumn: continuation)
    let compiled = ExpressionChecker.compile(text, origin: origin, continuationColumn: continuation, schema: FuzzSchema.schema)
    switch (parsed, compiled) {
    case (.failure, .success): fatalError("the checker compiled text the parser refuses")
    case (.failure(let errors), _), (_, .failure(let errors)):
        if errors.diagnostics.isEmpty { fatalError("a failure without a diagnostic") }
        for diagnostic in errors.diagnostics where diagnostic.location == nil || diagnostic.location!.line < origin.line {
            fatalError("a diagnostic before the condition: \(diagnostic.location?.description ?? "nowhere")")
        }
        return 0
    case (.success, .success(let condition)):
        _ = condition.readPaths.joined(separator: ",")
        for input in FuzzSchema.inputs {
            let value = condition.evaluate(input)
            if let constant = condition.constantValue, value != constant {
                fatalError("folded to \(constant) but evaluates to \(value.map { "\($0)" } ?? "an error")")
            }
        }
        return 0
    }
}

/// The schema and requests conditions are checked and evaluated against.
enum FuzzSchema {
    static let schema: ExpressionSchema = {
        var s = ExpressionSchema()
        s.subjectAttributes = [
            "analytics": .bool, "dataSharing": .enumeration(["none", "minimal", "standard"]), "age": .int, "score": .double,
            "nickname": .string, "trustedUntil": .timestamp, "groups": .list(.string), "window": .duration,
        ]
        s.resourceAttributes = ["amount": .double, "count": .int, "tags": .list(.string), "matrix": .list(.list(.int)), "status": .enumeration(["draft", "published"])]
        s.contextAttributes = ["region": .string, "kiosk": .bool, "window": .duration]
        s.tiers = ["free", "pro", "team"]
        s.appRoles = ["customer", "admin"]
        s.resourceTypes = ["project", "app"]
        s.resourceRoles = ["owner", "editor", "viewer"]
        return s
    }()

    static let inputs: [EvaluationInput] = {
        let now = Date(timeIntervalSince1970: 1_795_348_800)
        let full = Subject(
            id: "u1", tier: "pro", subscriptionExpiry: now + 60, roles: ["admin"], auth: Authentication(method: "pin", verifiedAt: now - 299),
            attributes: [
                "analytics": .bool(true), "dataSharing": .string("minimal"), "age": .int(Int.max), "score": .double(-1e308),
                "nickname": .string("é\u{301}"), "trustedUntil": .string("2026-11-22T12:00:00.5Z"), "groups": .list([.string("a")]),
                "window": .double(1.5),
            ])
        let resource = Resource(
            type: "project", id: "p1", ownerId: "u1", members: ["u1": "editor", "": "viewer"], usage: ["sources": Int.min, "big": Int.max],
            attributes: ["amount": .int(500), "count": .double(2), "tags": .list([]), "matrix": .list([.list([.int(1)])]), "status": .string("draft")])
        return [
            EvaluationInput(
                request: Request(subject: full, action: "a", resource: resource, context: Context(now: now, attributes: ["region": .string("eu"), "window": .string("5m")])),
                now: now, effectiveTier: "pro", signedIn: true, resourceRole: "editor"),
            EvaluationInput(
                request: Request(subject: Subject(attributes: ["age": .string("x"), "groups": .list([.int(1)])]), action: "a", resource: Resource(type: "app")),
                now: now, effectiveTier: "free", signedIn: false, resourceRole: nil),
        ]
    }()
}
