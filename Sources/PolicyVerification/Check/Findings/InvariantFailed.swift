import PolicyModel

/// `invariant-failed`: an invariant of the set's `invariants:` does not hold for a request of the space.
///
/// The message says what was expected and what the engine decided; the help gives the counterexample request to
/// replay with `policy explain` and the rule that decided it, if one did.
struct InvariantFailed: Sendable {
    static let code = DiagnosticCode.invariantFailed
    /// The invariant, with its counterexample (nil only for one reported without).
    let invariant: InvariantResult

    var message: String {
        var message = "invariant '\(visible(invariant.name))' does not hold"
        if let c = invariant.counterexample {
            let d = c.explanation.decision
            message += ": expected \(c.expected), got \(d.effect.rawValue) (\(d.reason.rawValue))"
        }
        return message
    }
    var help: [String] {
        guard let c = invariant.counterexample else { return [] }
        return ["counterexample: \(c.request.json.rendered())"] + (c.explanation.decision.policy.map { ["decided by \($0)"] } ?? [])
    }
    /// The finding as `policy check --format github` annotates it.
    var diagnostic: Diagnostic { Diagnostic(.error, Self.code, message, at: invariant.location, help: help) }
}
