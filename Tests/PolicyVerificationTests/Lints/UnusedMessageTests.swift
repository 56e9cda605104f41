import Testing
@testable import PolicyVerification

@Suite struct UnusedMessageTests {
    @Test func eachCauseIsFoundAndWorded() {
        let found = findings(UnusedMessage.self, """
            messages:
              requires_upgrade: "Upgrade to unlock."
              unauthenticated: "Sign in, please."
              allowed: "Welcome!"
              denied_by_rule: "Not allowed here."
            resources:
              app:
                messages:
                  default_deny: "Nope."
                actions:
                  export:
                    signIn: true
                    messages:
                      unauthenticated: "Sign in to export."
                      denied_by_rule: "Blocked."
                  browse: {}
            rules:
              - name: no-kiosk-exports
                effect: deny
                actions: [export]
                when: has(context.attributes.kiosk) && context.attributes.kiosk
                message: "Exports are off on shared devices."
              - name: closed-at-night
                effect: deny
                actions: [browse]
                when: has(context.attributes.night) && context.attributes.night
            attributes:
              context:
                kiosk: bool
                night: bool
            """)
        let byReason = Dictionary(found.map { ($0.reason.value, $0.cause) }, uniquingKeysWith: { a, _ in a })
        #expect(byReason == [
            "requires_upgrade": .neverGiven(scope: "the set"),
            "unauthenticated": .overridden(scope: "the set"),
            "allowed": .allowedCarriesNone,
            "default_deny": .defaultDenyNotTopLevel,
            "denied_by_rule": .overridden(scope: "'app.export'"),
        ])
        #expect(found.first { $0.reason.value == "allowed" }?.help == "an allowed decision carries no message; remove it")
        #expect(
            found.first { $0.reason.value == "requires_upgrade" }?.help
                == "no action in the set can be denied with 'requires_upgrade'; remove it")
    }
}
