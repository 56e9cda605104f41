import PolicyModel

/// `action-never-allowed`: no request of an action's space is allowed.
///
/// Every request of the action's space was decided and none allowed. It is a mistake unless the set says nobody
/// may: a requirement written to refuse everyone (consent `when: false`), or deny rules refusing every request; those
/// are not reported. The reason most requests were denied with points at the requirement to look at.
struct ActionNeverAllowed: SpaceFinding {
    var code: DiagnosticCode { .actionNeverAllowed }
    let action: SpaceAction
    /// Requests in the action's space.
    let total: Int
    /// The reason most requests were denied with.
    let mostCommon: Reason?
    let at: SourceLocation

    var message: String {
        "no request can take '\(action.action)' on '\(action.resourceType)': all \(total) requests of its space are denied"
            + (mostCommon.map { ", most with \($0.rawValue)" } ?? "")
    }
    var help: String? { "if nobody should take it, say so with a deny rule; otherwise check its requirements and tiers" }
}
