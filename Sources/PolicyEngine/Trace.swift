import PolicyModel

/// A decision together with every check and rule the engine considered to reach it.
public struct Explanation: Sendable, Hashable {
    /// The decision, as `decide` gives it.
    public var decision: Decision
    /// Every check and rule considered, in order.
    public var trace: [TraceStep]

    /// The contract's decision object with a `trace` array added.
    public var json: JSONText {
        guard case .object(var fields) = decision.json else { return decision.json }
        fields.append(.init("trace", .array(trace.map(\.json))))
        return .object(fields)
    }
}

/// One check in an explanation: what was checked, how it came out, and where it is written.
public struct TraceStep: Sendable, Hashable {
    /// How a check came out.
    public enum Outcome: String, Sendable, Hashable {
        /// Passed, failed (and decided), skipped (a rule that did not match), or a fact noted along the way.
        case pass, fail, skip, info
    }

    /// What was checked: `sign-in`, `feature sync`, `deny rule NAME` ...
    public var check: String
    /// How it came out.
    public var outcome: Outcome
    /// Why, in words: "tier 'free' lacks feature 'sync'".
    public var detail: String
    /// Where the check is written; nil for facts of the request.
    public var location: SourceLocation?

    /// A step from its parts.
    public init(check: String, outcome: Outcome, detail: String, location: SourceLocation?) {
        self.check = check
        self.outcome = outcome
        self.detail = detail
        self.location = location
    }

    /// The step as the explain JSON writes it.
    public var json: JSONText {
        var fields: [JSONText.Field] = [
            .init("check", .string(check)), .init("outcome", .string(outcome.rawValue)), .init("detail", .string(detail)),
        ]
        if let location { fields.append(.init("policy", .string(location.description))) }
        return .object(fields)
    }
}

/// Receives trace steps; `NoTracer` compiles away so `decide` pays nothing for `explain`.
protocol Tracer {
    mutating func record(_ step: @autoclosure () -> TraceStep)
}

struct NoTracer: Tracer {
    @inline(__always) mutating func record(_ step: @autoclosure () -> TraceStep) {}
}

struct TraceRecorder: Tracer {
    var steps: [TraceStep] = []
    mutating func record(_ step: @autoclosure () -> TraceStep) { steps.append(step()) }
}
