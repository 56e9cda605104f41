import PolicyModel

/// `space-too-large`: an action's request space holds more requests than the enumerator will try.
///
/// The space is the product of every axis the action's requirements and conditions read; past the bound its
/// invariants and lints are skipped, not slowed down.
struct SpaceTooLarge: SpaceFinding {
    var code: DiagnosticCode { .spaceTooLarge }
    let action: SpaceAction
    /// Requests the space holds.
    let count: Int
    /// The most the enumerator tries per action.
    let bound: Int
    let at: SourceLocation

    var message: String {
        "the request space of '\(action.resourceType).\(action.action)' holds \(count) requests, over \(bound): "
            + "its invariants and lints are not checked"
    }
    var help: String? { "split conditions that compare many different literals, or fewer attributes per action" }
}
