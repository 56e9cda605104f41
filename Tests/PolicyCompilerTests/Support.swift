import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax

let conditionOrigin = SourceLocation(file: "c.yaml", line: 5, column: 10)

func testSchema() -> ExpressionSchema {
    var s = ExpressionSchema()
    s.subjectAttributes = [
        "analytics": .bool, "dataSharing": .enumeration(["none", "minimal", "full"]), "birthYear": .int, "score": .double,
        "nickname": .string, "trustedUntil": .timestamp, "groups": .list(.string),
    ]
    s.resourceAttributes = [
        "amount": .double, "count": .int, "tags": .list(.string), "deadline": .timestamp,
        "status": .enumeration(["draft", "published"]), "matrix": .list(.list(.int)),
    ]
    s.contextAttributes = ["region": .string, "window": .duration]
    s.tiers = ["free", "pro", "academic", "team"]
    s.appRoles = ["customer", "driver", "partner", "admin"]
    s.resourceTypes = ["project", "document"]
    s.resourceRoles = ["owner", "editor", "commenter", "viewer"]
    return s
}

func compile(_ text: String, schema: ExpressionSchema = testSchema()) -> Result<CompiledCondition, ExpressionDiagnostics> {
    ExpressionChecker.compile(text, origin: conditionOrigin, schema: schema)
}

let t0 = Date(timeIntervalSince1970: 1_795_348_800)  // 2026-11-22T12:00:00Z

func makeInput(
    subject: Subject = Subject(id: "u1", tier: "pro", roles: ["customer"], auth: Authentication(method: "pin", verifiedAt: t0 - 60)),
    resource: Resource = Resource(type: "project", id: "p1", ownerId: "u2", members: ["u1": "editor"], usage: ["sources": 49]),
    context: Context = Context(), now: Date = t0, tier: String = "pro", signedIn: Bool = true, role: String? = "editor"
) -> EvaluationInput {
    EvaluationInput(
        request: Request(subject: subject, action: "view", resource: resource, context: context), now: now, effectiveTier: tier,
        signedIn: signedIn, resourceRole: role)
}
