import PolicyModel

/// `invariant-not-proved`: an invariant held on every request tried, but the space was only sampled.
///
/// Where a condition compares values the space cannot enumerate (`SpaceNotExhaustive`) or an action's space is too
/// large (`SpaceTooLarge`), passing is evidence, not proof; the sampled places are named.
struct InvariantNotProved: SpaceFinding {
    var code: DiagnosticCode { .invariantNotProved }
    let invariant: String
    /// Requests tried.
    let checked: Int
    /// What was sampled rather than enumerated, e.g. `doc.read not enumerated`.
    let sampled: [String]
    let at: SourceLocation

    var message: String {
        "invariant '\(invariant)' held on all \(checked) requests tried, but the space only samples " + sampled.joined(separator: ", ")
    }
    var help: String? { nil }
}
