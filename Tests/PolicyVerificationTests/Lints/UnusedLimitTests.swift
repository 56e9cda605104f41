import Testing
@testable import PolicyVerification

@Suite struct UnusedLimitTests {
    @Test func aLimitNoActionConsumesIsFound() {
        let found = findings(UnusedLimit.self, """
            tiers:
              free: {name: Free, default: true}
              pro: {name: Pro}
            limits:
              sources: {name: sources, tiers: {free: 50}}
              projects: {name: projects, tiers: {free: 3}}
            resources:
              app:
                actions:
                  add_source: {limit: sources}
            """)
        #expect(found.map(\.limit.value) == ["projects"])
        #expect(found.map(\.rendered) == ["6:3: limit 'projects' is declared but no action consumes it"])
        #expect(found.first?.help == "add `limit: projects` to the action that uses it up, or remove the limit")
    }
}
