import Testing
@testable import PolicyVerification

@Suite struct UnusedAttributeTests {
    @Test func attributesNoConditionReadsAreFoundAndTheOwnerFieldCountsAsRead() {
        let found = findings(UnusedAttribute.self, """
            attributes:
              subject:
                analytics: bool
                theme: string
              resource:
                amount: int
                payer: string
              context:
                kiosk: bool
            resources:
              payment:
                owner: attributes.payer
                actions:
                  pay: {}
                  track:
                    consent: {name: analytics, when: has(subject.attributes.analytics) && subject.attributes.analytics}
            rules:
              - name: big-payments
                effect: deny
                resources: [payment]
                actions: [pay]
                when: has(resource.attributes.amount) && resource.attributes.amount > 1000
            """)
        #expect(found.map(\.path).sorted() == ["context.attributes.kiosk", "subject.attributes.theme"])
        #expect(found.map(\.rendered).sorted() == [
            "4:5: subject attribute 'theme' is declared but no condition reads it",
            "9:5: context attribute 'kiosk' is declared but no condition reads it",
        ])
    }
}
