import PolicyCompiler
import PolicyEngine
import PolicyModel

/// One lint: a check over a set that loaded, reporting warnings with a stable code, at the declaration at fault,
/// each with a help line. `policy check --strict` makes its warnings errors.
public struct LintRule: Sendable {
    /// The code its warnings carry; docs/cli.md lists every code.
    public let kind: DiagnosticCode
    /// The code as text, e.g. `unused-feature`.
    public var code: String { kind.rawValue }
    /// One line for docs and `--help`: what the lint finds.
    public var summary: String { kind.summary }
    package let run: @Sendable (LintInput) -> [Diagnostic]

    package init(code: DiagnosticCode, run: @escaping @Sendable (LintInput) -> [Diagnostic]) {
        self.kind = code
        self.run = run
    }
}

/// What a lint reads: the declarations as written, with locations, and the policy they compiled to.
package struct LintInput: Sendable {
    package let result: PolicyLoadResult
    package let policy: CompiledPolicy
    package var declarations: PolicyDeclarations { result.declarations }
}

/// Runs lints over a loaded policy set.
public enum PolicyLinter {
    /// Every lint `policy check` runs. Lints over the request space (shadowed rules, constant conditions, actions
    /// no one may take, allow rules wider than a deny beside them) join this list when the space enumerator lands.
    public static let rules: [LintRule] = DeclarationLints.all

    /// Warnings for a set; none for a set that did not load, whose errors come first.
    public static func lint(_ result: PolicyLoadResult, rules: [LintRule] = PolicyLinter.rules) -> [Diagnostic] {
        guard let policy = result.policy else { return [] }
        let input = LintInput(result: result, policy: policy)
        return rules.flatMap { $0.run(input) }.sortedForDisplay()
    }
}
