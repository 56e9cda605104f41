import PolicyCompiler
import PolicyEngine
import PolicyModel

/// The outcome of proving one declared invariant over a policy set's request space.
public struct InvariantResult: Sendable {
    public var name: String
    public var location: SourceLocation
    /// How many requests of the space the invariant was checked on.
    public var checked: Int
    /// The first request that breaks the invariant; nil when it holds on the whole space.
    public var counterexample: Counterexample?

    public var passed: Bool { counterexample == nil }
}

/// A concrete request that breaks an invariant, with what was expected and how the engine decided.
public struct Counterexample: Sendable {
    public var request: Request
    /// What the invariant required, e.g. "deny" or "a message on every deny".
    public var expected: String
    public var explanation: Explanation
}

/// Every invariant of a set, the size of the space they were proved over, and warnings (a condition that
/// makes the space infinite, an invariant that selects nothing) or errors (an invariant written wrongly).
///
/// `InvariantProver` makes these values, and its results and counterexamples; callers read them, so their memberwise
/// initialisers stay internal.
public struct InvariantReport: Sendable {
    public var results: [InvariantResult] = []
    public var diagnostics: [Diagnostic] = []
    /// Requests enumerated (the union over all (resource type, action) pairs).
    public var spaceSize: Int = 0
}
