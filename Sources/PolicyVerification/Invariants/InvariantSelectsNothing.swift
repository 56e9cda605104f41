import PolicyModel

/// `invariant-selects-nothing`: an invariant whose `when:` matches no request of the space, so it proves nothing.
///
/// An invariant that selects nothing holds vacuously: usually its `when:` names an action of another resource type,
/// or a role that type does not have.
struct InvariantSelectsNothing: SpaceFinding {
    var code: DiagnosticCode { .invariantSelectsNothing }
    let invariant: String
    let at: SourceLocation

    var message: String { "invariant '\(invariant)' selects no request, so it proves nothing" }
    var help: String? { "check its 'when': an action of that resource type, a role of that type ..." }
}
