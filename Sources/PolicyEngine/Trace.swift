import PolicyModel

/// A decision together with every check and rule the engine considered to reach it.
public struct Explanation: Sendable, Hashable {
    /// The decision, as `decide` gives it.
    public var decision: Decision
    /// Every check and rule considered, in order, in words.
    public var trace: [TraceStep]
    /// The same steps as values, as the engine emitted them: what coverage and the lints read.
    package var events: [TraceEvent] = []

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

/// One thing the engine did while deciding, as a value: which rule or requirement, how it came out, and the
/// request facts the explain text shows. `TraceEvent.render` turns events into today's `TraceStep`s; coverage,
/// the space lints and the prover read the events themselves, never the words.
package enum TraceEvent: Sendable, Hashable {
    /// The request's resource type is not one of the policy's (the request's spelling).
    case unknownResourceType(String)
    /// The resource type is known but the action is not one of its actions (the request's action, the type's name).
    case unknownAction(String, type: String)
    /// The (resource type, action) resolved to the table's entry at `slot`.
    case action(slot: Int)
    /// The subject as the policy sees it: signed in or not, and its effective tier's index.
    case subject(signedIn: Bool, tier: Int)
    /// A deny or allow rule considered: the rule's index in `CompiledPolicy.rules`, its condition's value (true when it
    /// has none, nil when it failed to evaluate) and whether the rule applies, and so decides.
    case rule(index: Int, condition: Bool?, applies: Bool)
    /// A requirement of the action checked: how it came out, and where it is written.
    case requirement(RequirementOutcome, at: SourceLocation?)

    /// The rule that decided, if one did: the last rule event that applies (a deny rule or an allow rule decides as
    /// soon as it applies).
    package static func decidingRule(in events: [TraceEvent]) -> Int? {
        for event in events.reversed() {
            if case .rule(let index, _, true) = event { return index }
        }
        return nil
    }
}

/// Receives trace events; `NoTracer` compiles away so `decide` pays nothing for `explain`.
protocol Tracer {
    mutating func record(_ event: @autoclosure () -> TraceEvent)
}

struct NoTracer: Tracer {
    @inline(__always) mutating func record(_ event: @autoclosure () -> TraceEvent) {}
}

extension Array: Tracer where Element == TraceEvent {
    mutating func record(_ event: @autoclosure () -> TraceEvent) { append(event()) }
}

extension DecisionTable {
    /// The explain text of `events`: the only place the trace's words are written.
    func render(_ events: [TraceEvent]) -> [TraceStep] {
        var entry: ActionEntry?
        return events.map { event in
            switch event {
            case .unknownResourceType(let type):
                return TraceStep(check: "resource type", outcome: .fail, detail: "unknown resource type '\(type)'", location: nil)
            case .unknownAction(let action, let type):
                return TraceStep(check: "action", outcome: .fail, detail: "'\(action)' is not an action of '\(type)'", location: nil)
            case .action(let slot):
                entry = entries[slot]
                return TraceStep(check: "action", outcome: .pass, detail: "\(entries[slot].typeName).\(entries[slot].plan.name)", location: entries[slot].plan.location)
            case .subject(let signedIn, let tier):
                return TraceStep(
                    check: "subject", outcome: .info, detail: "\(signedIn ? "signed in" : "signed out"), effective tier '\(tiers[tier].id)'", location: nil)
            case .rule(let index, _, let applies):
                let rule = rules[index]
                let passing: TraceStep.Outcome = rule.effect == .deny ? .fail : .pass
                return TraceStep(
                    check: "\(rule.effect.rawValue) rule \(rule.name)", outcome: applies ? passing : .skip,
                    detail: applies ? "matched" : "condition false", location: rule.location)
            case .requirement(let outcome, let location):
                // Every requirement event follows the action event.
                guard let entry else { preconditionFailure("a requirement traced before its action") }
                return TraceStep(
                    check: outcome.check(in: entry.plan), outcome: outcome.passed ? .pass : .fail,
                    detail: outcome.detail(entry, tiers: tiers), location: location)
            }
        }
    }
}
