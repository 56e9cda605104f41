import PolicyModel

/// `space-too-large`: a request space holds more requests than the check enumerating it will try.
///
/// The space is the product of every axis the action's requirements and conditions read; past the bound the check is
/// skipped, not slowed down, and the warning says which check: an action's invariants and lints (`policy check`), its
/// decision diff (`policy diff`), or a resource type's matrix (`policy matrix`).
struct SpaceTooLarge: Sendable {
    static let code = DiagnosticCode.spaceTooLarge
    /// What was not enumerated: an action as `type.action`, or for the matrix a resource type.
    let space: String
    /// Requests the space holds.
    let count: Int
    /// The check that skipped it.
    let check: SpaceCheck
    /// Where the warning points; nil for a whole resource type or an action the diff names by text alone.
    let at: SourceLocation?

    var message: String {
        let skipped =
            switch check {
            case .invariants(let bound): ", over \(bound): its invariants and lints are not checked"
            case .diff: ": its decisions were not compared"
            case .matrix(let bound): ", over \(bound): no matrix for it"
            }
        return "the request space of '\(space)' holds \(count) requests" + skipped
    }
    var help: String? {
        guard case .invariants = check else { return nil }
        return "split conditions that compare many different literals, or fewer attributes per action"
    }
    /// The finding as the warning `policy check`, `diff` and `matrix` show.
    var diagnostic: Diagnostic { Diagnostic(.warning, Self.code, message, at: at, help: help.map { [$0] } ?? []) }
}

/// The checks that enumerate a request space, which a too large or sampled space costs different things.
enum SpaceCheck: Sendable, Hashable {
    /// An action's invariants and space lints (`policy check`), with the most requests tried per action.
    case invariants(bound: Int)
    /// An action's decision diff between two versions (`policy diff`).
    case diff
    /// A resource type's decision matrix (`policy matrix`), with the most requests tabulated per type.
    case matrix(bound: Int)
}
