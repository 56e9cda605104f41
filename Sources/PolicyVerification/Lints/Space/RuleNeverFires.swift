import PolicyModel

/// `rule-never-fires`: a rule that never decides a request, with no other rule to blame.
///
/// Either it matches no request of the space at all, or (an allow rule) the action's requirements already allow
/// every request it matches, so the engine never needs it. A rule another rule pre-empts is `rule-shadowed` instead.
struct RuleNeverFires: SpaceFinding {
    var code: DiagnosticCode { .ruleNeverFires }

    /// Why the rule never decides.
    enum Cause: Sendable, Hashable {
        /// An allow rule whose every matched request the requirements allow already.
        case requirementsAllowFirst
        /// It matches no request.
        case matchesNothing
    }

    let rule: RuleFacts
    let cause: Cause
    let at: SourceLocation

    var message: String {
        switch cause {
        case .requirementsAllowFirst:
            "allow rule '\(rule.name)' never decides\(rule.proof): the action's requirements already allow every request it matches"
        case .matchesNothing:
            "\(rule.kind) rule '\(rule.name)' matches no request\(rule.proof)"
        }
    }
    var help: String? {
        switch cause {
        case .requirementsAllowFirst: "delete it, or widen it to the requests the requirements refuse"
        case .matchesNothing: "fix its condition or the actions it names"
        }
    }
}
