import PolicyCompiler
import PolicyModel
import Testing
@testable import PolicyVerification

/// The findings of one lint over a set of one file, `policy.yaml`; records an issue when the set does not load.
func findings<Finding: LintFinding>(_ kind: Finding.Type, _ yaml: String) -> [Finding] {
    let result = load(yaml)
    guard let policy = result.policy else {
        Issue.record("the set did not load: \(result.diagnostics.map(\.message))")
        return []
    }
    return kind.find(in: LintInput(result: result, policy: policy))
}

extension LintFinding {
    /// `line:column: message`, as the golden files show it (without the file name).
    var rendered: String { "\(at.location.line):\(at.location.column): \(message)" }
}
