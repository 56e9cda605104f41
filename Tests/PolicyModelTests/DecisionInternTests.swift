import Testing

@testable import PolicyModel

/// A decision whose text is interned (`Decision.interned`, what a compiled policy does with the decisions it builds
/// once) is the same decision: every field, equality, hash and written bytes; equal texts share one object.
@Suite struct DecisionInternTests {
    static let decisions: [Decision] = [
        Decision(effect: .allow, reason: .allowed),
        Decision(effect: .allow, reason: .allowed, policy: SourceLocation(file: "a/tiers.yaml", line: 3, column: 5)),
        Decision(effect: .deny, reason: .requiresUpgrade, message: "Upgrade to \"Pro\"", upgradeTo: "pro",
                 policy: SourceLocation(file: "a/actions.yaml", line: 14, column: 7)),
        Decision(effect: .deny, reason: .limitExceeded, message: "You've reached the limit of 50 sources.", limit: 50, used: 50,
                 remaining: 0, upgradeTo: "pro", policy: SourceLocation(file: "a/tiers.yaml", line: 9, column: 1)),
    ]

    @Test(arguments: decisions)
    func anInternedDecisionIsTheSameDecision(_ decision: Decision) {
        let interned = decision.interned
        #expect(interned == decision)
        #expect(interned.hashValue == decision.hashValue)
        #expect(interned.effect == decision.effect && interned.reason == decision.reason)
        #expect(interned.message == decision.message && interned.upgradeTo == decision.upgradeTo && interned.policy == decision.policy)
        #expect(interned.limit == decision.limit && interned.used == decision.used && interned.remaining == decision.remaining)
        var written: [UInt8] = []
        var writtenInterned: [UInt8] = []
        DecisionWriter.append(decision, to: &written)
        DecisionWriter.append(interned, to: &writtenInterned)
        #expect(writtenInterned == written)
    }

    @Test func equalTextsShareOneInternedObject() {
        let a = Decision(effect: .deny, reason: .notMember, message: "Members only.").interned
        let b = Decision(effect: .deny, reason: .notMember, message: "Members only.").interned
        #expect(a.text != nil && a.text === b.text)
    }

    @Test func anInternedDecisionCanStillBeChanged() {
        var decision = Decision(effect: .deny, reason: .roleRequired, message: "Admins only.", upgradeTo: "team").interned
        decision.message = "Changed."
        decision.limit = 3
        #expect(decision.message == "Changed." && decision.upgradeTo == "team" && decision.limit == 3)
        #expect(Decision(effect: .deny, reason: .roleRequired, message: "Admins only.").interned.message == "Admins only.")
    }
}
