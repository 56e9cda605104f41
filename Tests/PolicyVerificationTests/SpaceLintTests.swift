import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
@testable import PolicyVerification

/// Each space lint fires on a set written to trigger it, at the right place, and not on the shipped sets.
@Suite struct SpaceLintTests {
    func lints(_ yaml: String) -> [Diagnostic] {
        let result = load(yaml)
        #expect(!result.diagnostics.hasErrors, "\(result.diagnostics.map(\.message))")
        return InvariantProver.prove(result).diagnostics
    }

    @Test(arguments: ["contacasal", "mimisupply", "research-crawler"])
    func shippedSetsAreLintClean(_ name: String) {
        let report = InvariantProver.prove(shipped(name))
        #expect(report.diagnostics.isEmpty, "\(report.diagnostics.map { "\($0.code): \($0.message)" })")
    }

    @Test func anActionNobodyCanTakeIsReported() {
        let found = lints("""
            appRoles: {admin: {name: Admin}}
            resources:
              console:
                actions:
                  open: {appRoles: [admin]}
            rules:
              - name: no admins either
                effect: deny
                resources: [console]
                actions: [open]
                when: '"admin" in subject.roles'
            """)
        let lint = found.first { $0.code == "action-never-allowed" }
        #expect(lint?.location?.line == 5)
        #expect(lint?.message.contains("no request can take 'open' on 'console'") == true)
    }

    @Test func aDenyShadowedByAnEarlierDenyIsReported() {
        let found = lints("""
            attributes: {resource: {amount: int}}
            resources:
              invoice: {actions: {pay: {}}}
            rules:
              - {name: big, effect: deny, resources: [invoice], actions: [pay], when: "resource.attributes.amount > 100"}
              - {name: huge, effect: deny, resources: [invoice], actions: [pay], when: "resource.attributes.amount > 1000"}
            """)
        let lint = found.first { $0.code == "rule-shadowed" }
        #expect(lint?.message == "deny rule 'huge' never decides: deny rule 'big' decides first every request it matches")
        #expect(lint?.location?.line == 6)
        #expect(lint?.notes.first?.0?.line == 5)
        #expect(!found.contains { $0.code == "rule-shadowed" && $0.location?.line == 5 })
    }

    @Test func anAllowRuleTheRequirementsMakeUselessIsReported() {
        let found = lints("""
            resources:
              page: {actions: {read: {}}}
            rules:
              - {name: readers, effect: allow, resources: [page], actions: [read], when: "subject.signedIn"}
            """)
        #expect(found.map(\.code) == ["rule-never-fires"])
        #expect(found.first?.message.contains("the action's requirements already allow every request it matches") == true)
    }

    @Test func constantConditionsAreReported() {
        let found = lints("""
            attributes: {resource: {amount: int}}
            resources:
              invoice: {actions: {pay: {signIn: true}}}
            rules:
              - {name: never, effect: deny, resources: [invoice], actions: [pay], when: "resource.attributes.amount < 0 && resource.attributes.amount > 5"}
              - {name: always, effect: allow, resources: [invoice], actions: [pay], when: "subject.signedIn || !subject.signedIn"}
            """)
        let never = found.first { $0.code == "condition-always-false" }
        #expect(never?.location?.line == 5)
        #expect(never?.message == "the condition of deny rule 'never' is false for every request, so the rule never applies")
        let always = found.first { $0.code == "condition-always-true" }
        #expect(always?.location?.line == 6)
    }

    @Test func anAllowWiderThanTheDenyBesideItIsReported() {
        let found = lints("""
            attributes: {resource: {archived: bool}}
            tiers: {free: {default: true}, pro: {}}
            features: {export: {tiers: [pro]}}
            resources:
              report: {actions: {export: {feature: export}}}
            rules:
              - {name: archived stay, effect: deny, resources: [report], actions: [export], when: "has(resource.attributes.archived) && resource.attributes.archived"}
              - {name: everyone exports, effect: allow, resources: [report], actions: [export]}
            """)
        #expect(found.map(\.code) == ["allow-wider-than-deny"])
        #expect(found.first?.location?.line == 8)
        #expect(found.first?.message.hasPrefix("allow rule 'everyone exports' is wider than deny rule 'archived stay' beside it") == true)
        // A narrower allow beside the same deny is fine.
        let narrow = lints("""
            attributes: {resource: {archived: bool}}
            tiers: {free: {default: true}, pro: {}}
            features: {export: {tiers: [pro]}}
            resources:
              report: {actions: {export: {feature: export}}}
            rules:
              - {name: archived stay, effect: deny, resources: [report], actions: [export], when: "has(resource.attributes.archived) && resource.attributes.archived"}
              - {name: free may export drafts, effect: allow, resources: [report], actions: [export], when: "has(resource.attributes.archived) && !resource.attributes.archived"}
            """)
        #expect(!narrow.contains { $0.code == "allow-wider-than-deny" })
    }

    @Test func anActionOnlyADenyRuleRefusesIsDeliberate() {
        let found = lints("""
            resources:
              archive: {actions: {purge: {}}}
            rules:
              - {name: nobody purges, effect: deny, resources: [archive], actions: [purge]}
            """)
        #expect(found.isEmpty)
    }

    /// No set that loads denies without a message (the compiler refuses empty ones), so the lint is fed a
    /// decision made by hand.
    @Test func aDenyWithNoMessageIsReported() throws {
        let policy = try #require(load("resources:\n  doc: {actions: {open: {}}}\n").policy)
        let type = try #require(policy.resourceTypes["doc"])
        let action = try #require(type.actions["open"])
        let space = try #require(RequestSpace.build([policy]).first)
        var lint = SpaceLint(policy: policy)
        lint.begin(space, type: type, action: action)
        var first: SpacePoint?
        space.forEach { point in if first == nil { first = point } }
        let point = try #require(first)
        lint.record(point, request: space.request(point), decision: Decision(effect: .deny, reason: .defaultDeny, message: nil))
        lint.end()
        let found = lint.diagnostics().filter { $0.code == "deny-without-message" }
        #expect(found.count == 1)
        #expect(found.first?.location == action.location)
    }
}
