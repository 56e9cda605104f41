import PolicyModel

/// `space-not-exhaustive`: an action depends on a construct the request space can only sample.
///
/// The space tries every boundary of a comparison with a literal; a construct without one (two paths compared, a
/// function of a value) is sampled, so the action's invariants are checked, not proved.
struct SpaceNotExhaustive: SpaceFinding {
    var code: DiagnosticCode { .spaceNotExhaustive }
    let action: SpaceAction
    /// The construct, as the space describes it.
    let construct: String
    let at: SourceLocation

    var message: String {
        "'\(action.resourceType).\(action.action)' depends on \(construct), which the request space only samples: "
            + "its invariants are checked, not proved"
    }
    var help: String? { "compare request values with literals (==, <, in ...) so every boundary can be tried" }
}
