import Testing
@testable import PolicyVerification

@Suite struct UnusedTierTests {
    static let set = """
        tiers:
          free: {name: Free, default: true}
          pro: {name: Pro, products: [com.example.pro]}
          plus: {name: Plus}
          legacy: {name: Legacy}
        features:
          ai: {name: AI Suggestions, tiers: [pro]}
        resources:
          app:
            actions:
              suggest: {feature: ai}
        rules:
          - name: plus-gets-ai
            effect: allow
            resources: [app]
            actions: [suggest]
            when: subject.tier == "plus"
        """

    @Test func aTierNothingNamesIsFound() {
        let found = findings(UnusedTier.self, Self.set)
        #expect(found.map(\.tier.value) == ["legacy"])
        #expect(found.map(\.rendered) == ["5:3: tier 'legacy' is declared but no feature, product or condition names it, so it grants nothing"])
    }

    @Test func withLimitsATierLeftOutSaysSomethingSoItIsSilent() {
        let found = findings(UnusedTier.self, Self.set + "\nlimits:\n  projects: {name: projects, tiers: {free: 3}}\n")
        #expect(found.isEmpty)
    }
}
