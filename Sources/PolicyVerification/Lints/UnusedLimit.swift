import PolicyCompiler
import PolicyModel

/// `unused-limit`: a limit no action consumes.
///
/// A limit caps a usage counter for the actions that name it (`limit: sources`); one that no action names caps
/// nothing. Conditions cannot name limits, so the actions' `limit:` fields are the whole story.
struct UnusedLimit: LintFinding {
    static let code = DiagnosticCode.unusedLimit
    /// The limit's id as declared.
    let limit: Located<String>

    static func find(in input: LintInput) -> [UnusedLimit] {
        DeclarationLints.unused(input.declarations.limits.map(\.id), usedBy: \.limit, in: input).map(UnusedLimit.init)
    }

    var at: Located<String> { limit }
    var message: String { "limit '\(limit.value)' is declared but no action consumes it" }
    var help: String { "add `limit: \(limit.value)` to the action that uses it up, or remove the limit" }
}
