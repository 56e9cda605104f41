import Testing
@testable import PolicyVerification

@Suite struct UnusedFeatureTests {
    @Test func aFeatureNoActionNeedsIsFound() {
        let found = findings(UnusedFeature.self, """
            tiers:
              free: {name: Free, default: true}
              pro: {name: Pro}
            features:
              ai: {name: AI Suggestions, tiers: [pro]}
              export: {name: Export, tiers: [pro]}
            resources:
              app:
                actions:
                  suggest: {feature: ai}
            """)
        #expect(found.map(\.feature.value) == ["export"])
        #expect(found.map(\.rendered) == ["6:3: feature 'export' is declared but no action needs it"])
        #expect(found.first?.help == "gate an action with `feature: export`, or remove the feature")
    }

    @Test func everyFeatureGatingAnActionIsSilent() {
        let found = findings(UnusedFeature.self, """
            tiers:
              free: {name: Free, default: true}
              pro: {name: Pro}
            features:
              ai: {name: AI Suggestions, tiers: [pro]}
            resources:
              app:
                actions:
                  suggest: {feature: ai}
            """)
        #expect(found.isEmpty)
    }
}
