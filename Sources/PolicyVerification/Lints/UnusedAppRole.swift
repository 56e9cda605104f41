import PolicyCompiler
import PolicyModel

/// `unused-app-role`: an app role no action requires and no condition tests.
///
/// An app role is used by an action's `appRoles:` or by a condition comparing `subject.roles` with its name. When
/// some condition reads `subject.roles` without a literal, any role could match there, so the lint stays silent.
struct UnusedAppRole: LintFinding {
    static let code = DiagnosticCode.unusedAppRole
    /// The role's id as declared.
    let role: Located<String>

    static func find(in input: LintInput) -> [UnusedAppRole] {
        var used = Set(input.declarations.resourceTypes.flatMap { $0.actions.flatMap { $0.appRoles?.map(\.value) ?? [] } })
        guard let named = ConditionReads(input.policy).literals(on: [.field(.subjectRoles)]) else { return [] }
        used.formUnion(named)
        return input.declarations.appRoles.filter { !used.contains($0.id.value) }.map { UnusedAppRole(role: $0.id) }
    }

    var at: Located<String> { role }
    var message: String { "app role '\(role.value)' is declared but no action or condition needs it" }
    var help: String {
        "require it with `appRoles: [\(role.value)]` on an action or test `\"\(role.value)\" in subject.roles` in a rule, or remove it"
    }
}
