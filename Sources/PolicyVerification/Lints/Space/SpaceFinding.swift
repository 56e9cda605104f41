import PolicyModel

/// One finding of a lint over the request space: the data it found, and the message and help it renders, in one type.
///
/// `SpaceLint` enumerates the space once for every such lint (one pass over every request, as the matrix and
/// invariants use it) and builds these values from its totals; each lint's file states its reasoning and words it,
/// and its tests sit beside it in `Tests/PolicyVerificationTests/Lints/`.
protocol SpaceFinding: Sendable {
    /// The code its warning carries.
    var code: DiagnosticCode { get }
    /// Where the warning points.
    var at: SourceLocation { get }
    /// What is wrong, naming the rule or action.
    var message: String { get }
    /// What to do about it, when there is something to say.
    var help: String? { get }
    /// Related places (the rule that decides instead, the deny rule beside).
    var notes: [(SourceLocation?, String)] { get }
}

extension SpaceFinding {
    var notes: [(SourceLocation?, String)] { [] }

    /// The finding as the warning `policy check` shows.
    var diagnostic: Diagnostic { Diagnostic(.warning, code, message, at: at, help: help.map { [$0] } ?? [], notes: notes) }
}

/// An action of a resource type, as the space lints name it.
struct SpaceAction: Sendable, Hashable {
    let resourceType: String
    let action: String
}

/// A rule a finding points to besides the one at fault: the one that decides instead, the deny rule beside.
struct OtherRule: Sendable, Hashable {
    let name: String
    let effect: Effect
    let location: SourceLocation
}

/// What the space lints say of a rule: `allow` or `deny`, and whether the proof covered the whole space.
struct RuleFacts: Sendable, Hashable {
    /// The rule's name.
    let name: String
    let effect: Effect
    /// Whether the space was sampled (a condition over an unbounded value) rather than enumerated whole.
    let gapped: Bool

    /// `allow` or `deny`.
    var kind: String { effect == .deny ? "deny" : "allow" }
    /// Appended to a claim about every request: empty when the space was enumerated whole.
    var proof: String { gapped ? " of the requests tried" : "" }
}
