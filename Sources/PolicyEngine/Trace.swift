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

/// One requirement an action can state, in the order `decide` checks them.
package enum Requirement: Sendable, Hashable, CaseIterable {
    case signIn, auth, appRole, membership, feature, limit, consent
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

/// How one requirement came out, with the request facts its explain line shows.
package enum RequirementOutcome: Sendable, Hashable {
    case signedIn
    case signedOut
    case authSatisfied
    /// The subject verified by another method (its name), or not at all.
    case authMethodRefused(verifiedBy: String?)
    /// Verification older than the action's `maxAge`, or missing.
    case authStale
    case appRoleHeld
    case appRoleMissing
    case owner
    /// A member whose role (by name) grants the action.
    case roleGrants(String)
    /// A member whose role does not grant it: `owner_only` or `access_denied`.
    case roleRefused(String, Reason)
    case notMember
    /// The effective tier (index) has the feature, or lacks it.
    case featureHeld(tier: Int)
    case featureMissing(tier: Int)
    case withinLimit(used: Int, cap: Int)
    /// The effective tier (index) has no cap.
    case unlimited(tier: Int)
    case limitReached(used: Int, cap: Int)
    case consented
    /// A consent written `when: false`.
    case consentNeverGiven
    case consentRefused

    /// Which requirement this is an outcome of.
    package var requirement: Requirement {
        switch self {
        case .signedIn, .signedOut: .signIn
        case .authSatisfied, .authMethodRefused, .authStale: .auth
        case .appRoleHeld, .appRoleMissing: .appRole
        case .owner, .roleGrants, .roleRefused, .notMember: .membership
        case .featureHeld, .featureMissing: .feature
        case .withinLimit, .unlimited, .limitReached: .limit
        case .consented, .consentNeverGiven, .consentRefused: .consent
        }
    }

    /// The deny reason when the requirement failed; nil when it passed.
    package var failure: Reason? {
        switch self {
        case .signedIn, .authSatisfied, .appRoleHeld, .owner, .roleGrants, .featureHeld, .withinLimit, .unlimited, .consented: nil
        case .signedOut: .unauthenticated
        case .authMethodRefused, .authStale: .stepUpRequired
        case .appRoleMissing: .roleRequired
        case .roleRefused(_, let reason): reason
        case .notMember: .notMember
        case .featureMissing: .requiresUpgrade
        case .limitReached: .limitExceeded
        case .consentNeverGiven, .consentRefused: .consentRequired
        }
    }

    package var passed: Bool { failure == nil }
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
                let check = outcome.failure?.rawValue ?? Self.passedCheck(outcome, entry.plan)
                return TraceStep(
                    check: check, outcome: outcome.passed ? .pass : .fail, detail: detail(outcome, entry), location: location)
            }
        }
    }

    /// The check name of a requirement that passed (a failed one is named by its reason).
    private static func passedCheck(_ outcome: RequirementOutcome, _ action: ActionPlan) -> String {
        switch outcome.requirement {
        case .signIn: "sign-in"
        case .auth: "auth"
        case .appRole: "app role"
        case .membership: "membership"
        case .feature: "feature \(action.feature?.id ?? "")"
        case .limit: "limit \(action.limit?.id ?? "")"
        case .consent: "consent"
        }
    }

    private func detail(_ outcome: RequirementOutcome, _ entry: ActionEntry) -> String {
        let action = entry.plan
        switch outcome {
        case .signedIn: return "signed in"
        case .signedOut: return "sign-in required, subject is signed out"
        case .authSatisfied: return "method and freshness satisfied"
        case .authMethodRefused(let method): return "needs \(entry.authMethods.joined(separator: " or ")), verified by \(method ?? "nothing")"
        case .authStale: return "verification older than \(CompiledPolicy.formatDuration(entry.authMaxAge ?? 0)) or missing"
        case .appRoleHeld: return "has \((entry.appRoles ?? []).joined(separator: " or "))"
        case .appRoleMissing: return "needs app role \((entry.appRoles ?? []).joined(separator: " or "))"
        case .owner: return "owner"
        case .roleGrants(let role): return "role '\(role)' grants '\(action.name)'"
        case .roleRefused(let role, _): return "role '\(role)' does not grant '\(action.name)'"
        case .notMember: return "subject is not a member"
        case .featureHeld(let tier): return "tier '\(tiers[tier].id)' has it"
        case .featureMissing(let tier): return "tier '\(tiers[tier].id)' lacks feature '\(action.feature?.id ?? "")'"
        case .withinLimit(let used, let cap): return "\(used) of \(cap) used"
        case .unlimited(let tier): return "unlimited on '\(tiers[tier].id)'"
        case .limitReached(let used, let cap): return "\(used) of \(cap) \(entry.limitCounter) used"
        case .consented: return action.consent?.condition?.source ?? ""
        case .consentNeverGiven: return "consent can never be given"
        case .consentRefused: return "privacy settings do not consent"
        }
    }
}
