import PolicyModel

/// `condition-always-false` and `condition-always-true`: a rule's condition has the same value for every request it
/// was evaluated on.
///
/// Always false: it came out false on some request and true on none (or is the constant `false`), so the rule never
/// applies; a condition that errors on every request is neither, and is left to `rule-never-fires`. Always true: true
/// on every evaluation (no false, no error), so it restricts nothing and probably does not say what was meant.
struct ConstantCondition: SpaceFinding {
    let rule: RuleFacts
    /// The value it always has.
    let value: Bool
    /// Where the condition is written.
    let at: SourceLocation

    var code: DiagnosticCode { value ? .conditionAlwaysTrue : .conditionAlwaysFalse }
    var message: String {
        value
            ? "the condition of \(rule.kind) rule '\(rule.name)' is true for every request\(rule.proof): it restricts nothing"
            : "the condition of \(rule.kind) rule '\(rule.name)' is false for every request\(rule.proof), so the rule never applies"
    }
    var help: String? { value ? "drop the condition, or fix it to say what it means" : "fix the condition, or delete the rule" }
}
