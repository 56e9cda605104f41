import PolicyModel

/// `space-not-exhaustive`: an action or resource type depends on a construct the request space can only sample.
///
/// The space tries every boundary of a comparison with a literal; a construct without one (two paths compared, a
/// function of a value) is sampled, so the check over it is evidence, not proof: invariants are checked, not proved;
/// a diff may miss changes; a matrix shows a sample.
struct SpaceNotExhaustive: Sendable {
    static let code = DiagnosticCode.spaceNotExhaustive
    /// What depends on it: an action as `type.action`, or for the matrix a resource type.
    let space: String
    /// The construct, as the space describes it.
    let construct: String
    /// The check that only samples it (its bound plays no part here).
    let check: SpaceCheck
    /// Where the warning points; nil for a whole resource type or an action the diff names by text alone.
    let at: SourceLocation?

    var message: String {
        switch check {
        case .invariants: "'\(space)' depends on \(construct), which the request space only samples: its invariants are checked, not proved"
        case .diff: "'\(space)' depends on \(construct): the diff samples it, other requests may change too"
        case .matrix: "'\(space)' depends on \(construct), which the request space only samples: the matrix shows a sample"
        }
    }
    var help: String? {
        guard case .invariants = check else { return nil }
        return "compare request values with literals (==, <, in ...) so every boundary can be tried"
    }
    /// The finding as the warning `policy check`, `diff` and `matrix` show.
    var diagnostic: Diagnostic { Diagnostic(.warning, Self.code, message, at: at, help: help.map { [$0] } ?? []) }
}
