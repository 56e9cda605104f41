import PolicyCompiler
import PolicyModel

/// `unknown-name`: an invariant's `when:` names a resource type, action, subject class, tier, role or other name the
/// set does not declare.
///
/// An invariant over a name that does not exist would select nothing and hold vacuously, so it is an error (the set
/// does not check) rather than the `invariant-selects-nothing` warning; the help is the nearest declared name and the
/// list of those known.
struct InvariantUnknownName: Sendable {
    static let code = DiagnosticCode.unknownName
    /// The invariant's name.
    let invariant: String
    /// What kind of name it is (`tier`, `app role`, ...), as the message says it.
    let kind: String
    /// The name as written.
    let name: Located<String>
    /// The names of that kind the set knows, for the did-you-mean.
    let known: [String]

    var message: String { "unknown \(kind) '\(name.value)' in invariant '\(invariant)'" }
    var help: [String] { Suggestion.help(for: name.value, kind: kind + "s", known: known) }
    /// The finding as the error `policy check` shows, pointing at the name.
    var diagnostic: Diagnostic { Diagnostic(.error, Self.code, message, at: name.location, length: name.length, help: help) }
}
