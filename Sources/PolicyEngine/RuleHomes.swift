import Foundation
import PolicyModel

// The product rules analysis tools (lints, invariants, the request space) must agree with `decide` on, each
// stated once here so those tools ask rather than restate. `decide` calls them too (`DecisionTable.effectiveTier`,
// `InternedRequest.effectiveTier` and the rule loops in `Decide.swift`); callgrind counts the same instructions
// per decision as the inline forms they replaced (docs/performance.md). `RuleHomesTests` pins each home to what
// `decide` does.

extension CompiledPolicy {
    /// The id of the tier `decide` applies to the subject at `now`: the one features, limits and
    /// `subject.tier`-reading invariants see.
    package func effectiveTierID(of subject: Subject, now: Date) -> String {
        tiers[effectiveTier(of: subject, signedIn: subject.isSignedIn, now: now)].id
    }
}

extension Subject {
    /// Whether a subscription with this expiry has lapsed at `now`, so `decide` applies the default tier.
    package static func subscriptionHasLapsed(expiry: Date?, at now: Date) -> Bool {
        guard let expiry else { return false }
        return expiry < now
    }
}

extension Effect {
    /// Whether a rule of this effect matches when its condition errors (an absent value, a type mismatch):
    /// an erroring deny condition denies, an erroring allow condition does not allow.
    package var matchesWhenConditionErrors: Bool { self == .deny }
}
