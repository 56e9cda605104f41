import PolicyModel

/// `deny-without-message`: some request of an action is denied with no message for its user.
///
/// A deny shows the most specific message for its reason; when neither the deciding rule nor the set has one, the
/// app has nothing to show. The first such request is given, so it can be replayed with `policy explain`.
struct DenyWithoutMessage: SpaceFinding {
    var code: DiagnosticCode { .denyWithoutMessage }
    let action: SpaceAction
    /// The first request denied without a message.
    let example: Request
    let at: SourceLocation

    var message: String { "'\(action.resourceType).\(action.action)' denies with no message, e.g. for \(example.json.rendered(pretty: false))" }
    var help: String? { "give the rule a 'message', or the set a message for its reason" }
}
