import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing

/// The homes analysis tools ask (`RuleHomes.swift`) say what `decide` does.
@Suite struct RuleHomesTests {
    static let now = Date(timeIntervalSince1970: 1_795_348_800)

    static let policy: CompiledPolicy? = PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
        tiers:
          free: {name: Free, default: true}
          pro: {name: Pro}
        features:
          sync: {name: Sync, tiers: [pro]}
        attributes: {resource: {amount: int}}
        resources:
          doc:
            actions:
              sync: {feature: sync}
              pay: {signIn: true}
              refund: {signIn: true}
        rules:
          - {name: big, effect: deny, resources: [doc], actions: [pay], when: "resource.attributes.amount > 5"}
          - {name: small, effect: allow, resources: [doc], actions: [refund], when: "resource.attributes.amount < 5"}
        """.utf8))]).policy

    @Test func effectiveTierIsTheOneFeaturesSee() throws {
        let policy = try #require(Self.policy)
        let subjects: [(Subject, String)] = [
            (Subject(), "free"),
            (Subject(tier: "pro"), "free"),
            (Subject(id: "u", tier: "pro"), "pro"),
            (Subject(id: "u", tier: "pro", auth: Authentication(method: AuthMethod.anonymous)), "free"),
            (Subject(id: "u", tier: "pro", subscriptionExpiry: Self.now - 1), "free"),
            (Subject(id: "u", tier: "pro", subscriptionExpiry: Self.now), "pro"),
            (Subject(id: "u", tier: "platinum"), "free"),
        ]
        for (subject, tier) in subjects {
            #expect(policy.effectiveTierID(of: subject, now: Self.now) == tier)
            let decision = policy.decide(Request(subject: subject, action: "sync", resource: Resource(type: "doc"), context: Context(now: Self.now)))
            #expect(decision.isAllowed == (tier == "pro"))
        }
    }

    @Test func aSubscriptionLapsesStrictlyAfterItsExpiry() {
        #expect(!Subject.subscriptionHasLapsed(expiry: nil, at: Self.now))
        #expect(!Subject.subscriptionHasLapsed(expiry: Self.now, at: Self.now))
        #expect(Subject.subscriptionHasLapsed(expiry: Self.now - 1, at: Self.now))
    }

    /// `amount` absent makes both conditions error: the deny rule denies, the allow rule does not allow.
    @Test func anErroringConditionMatchesADenyRuleOnly() throws {
        let policy = try #require(Self.policy)
        let subject = Subject(id: "u")
        let pay = policy.decide(Request(subject: subject, action: "pay", resource: Resource(type: "doc")))
        #expect((pay.reason == .deniedByRule) == Effect.deny.matchesWhenConditionErrors)
        let refund = policy.decide(Request(subject: Subject(), action: "refund", resource: Resource(type: "doc")))
        #expect(refund.isAllowed == Effect.allow.matchesWhenConditionErrors)
        #expect(refund.reason == .unauthenticated)
    }
}
