import PolicyModel

/// `rule-shadowed`: a rule matches requests but never decides one, because another rule decides each first.
///
/// Of the rules that decided the requests it matched, the one that did so most often is named (ties go to the rule
/// written first), with a note at its place.
struct RuleShadowed: SpaceFinding {
    var code: DiagnosticCode { .ruleShadowed }
    let rule: RuleFacts
    /// The rule that decides first.
    let winner: OtherRule
    let at: SourceLocation

    var message: String {
        "\(rule.kind) rule '\(rule.name)' never decides\(rule.proof): "
            + "\(winner.effect == Effect.deny ? "deny" : "allow") rule '\(winner.name)' decides first every request it matches"
    }
    var help: String? { "delete it, or narrow or reorder the rule that decides first" }
    var notes: [(SourceLocation?, String)] { [(winner.location, "the rule that decides instead")] }
}
