import PolicyCompiler
import PolicyModel
import Testing
@testable import PolicyVerification

/// Each space finding renders its data the way the goldens show it; which requests produce a finding is tested
/// end to end in `SpaceLintTests`.
@Suite struct SpaceFindingTests {
    static let here = SourceLocation(file: "policy.yaml", line: 3, column: 5)
    static let there = SourceLocation(file: "policy.yaml", line: 9, column: 5)
    static let console = SpaceAction(resourceType: "console", action: "open")

    @Test func actionNeverAllowedNamesTheCommonestReasonWhenThereIsOne() {
        let with = ActionNeverAllowed(action: Self.console, total: 12, mostCommon: .unauthenticated, at: Self.here)
        #expect(with.message == "no request can take 'open' on 'console': all 12 requests of its space are denied, most with unauthenticated")
        let without = ActionNeverAllowed(action: Self.console, total: 12, mostCommon: nil, at: Self.here)
        #expect(without.message == "no request can take 'open' on 'console': all 12 requests of its space are denied")
        #expect(with.diagnostic.code == "action-never-allowed" && with.diagnostic.severity == .warning)
    }

    @Test func denyWithoutMessageGivesTheRequestToReplay() {
        let finding = DenyWithoutMessage(
            action: SpaceAction(resourceType: "doc", action: "read"), example: Request(action: "read", resource: Resource(type: "doc")), at: Self.here)
        #expect(finding.message.hasPrefix("'doc.read' denies with no message, e.g. for {"))
        #expect(finding.diagnostic.code == "deny-without-message")
    }

    @Test func conditionFindingsSayWhetherTheSpaceWasSampled() {
        let whole = RuleFacts(name: "r", effect: .deny, gapped: false)
        let sampled = RuleFacts(name: "r", effect: .allow, gapped: true)
        #expect(
            ConstantCondition(rule: whole, value: false, at: Self.here).message
                == "the condition of deny rule 'r' is false for every request, so the rule never applies")
        #expect(
            ConstantCondition(rule: sampled, value: true, at: Self.here).message
                == "the condition of allow rule 'r' is true for every request of the requests tried: it restricts nothing")
    }

    @Test func ruleShadowedNotesTheRuleThatDecidesInstead() {
        let finding = RuleShadowed(
            rule: RuleFacts(name: "late", effect: .deny, gapped: false), winner: OtherRule(name: "early", effect: .deny, location: Self.there),
            at: Self.here)
        #expect(finding.message == "deny rule 'late' never decides: deny rule 'early' decides first every request it matches")
        #expect(finding.diagnostic.notes.map(\.1) == ["the rule that decides instead"])
        #expect(finding.diagnostic.notes.map(\.0) == [Self.there])
    }

    @Test func ruleNeverFiresWordsEachCause() {
        let rule = RuleFacts(name: "r", effect: .allow, gapped: false)
        let requirements = RuleNeverFires(rule: rule, cause: .requirementsAllowFirst, at: Self.here)
        let nothing = RuleNeverFires(rule: rule, cause: .matchesNothing, at: Self.here)
        #expect(requirements.message == "allow rule 'r' never decides: the action's requirements already allow every request it matches")
        #expect(requirements.help == "delete it, or widen it to the requests the requirements refuse")
        #expect(nothing.message == "allow rule 'r' matches no request")
        #expect(nothing.help == "fix its condition or the actions it names")
    }

    @Test func allowWiderThanDenyGivesAnExampleWhenThereIsOne() {
        let finding = AllowWiderThanDeny(
            allow: "a", deny: OtherRule(name: "d", effect: .deny, location: Self.there), allowOnly: 3, example: "doc.read for role editor", at: Self.here)
        #expect(
            finding.message
                == "allow rule 'a' is wider than deny rule 'd' beside it: it matches every request the deny matches and 3 more, e.g. doc.read for role editor")
        #expect(finding.diagnostic.notes.map(\.1) == ["the deny rule"])
    }
    @Test func spaceTooLargeSaysWhichCheckItSkipped() {
        let invariants = SpaceTooLarge(space: "doc.read", count: 9, check: .invariants(bound: 4), at: Self.here)
        #expect(invariants.message == "the request space of 'doc.read' holds 9 requests, over 4: its invariants and lints are not checked")
        #expect(invariants.help == "split conditions that compare many different literals, or fewer attributes per action")
        let diff = SpaceTooLarge(space: "doc.read", count: 9, check: .diff, at: nil)
        #expect(diff.message == "the request space of 'doc.read' holds 9 requests: its decisions were not compared")
        let matrix = SpaceTooLarge(space: "doc", count: 9, check: .matrix(bound: 4), at: nil)
        #expect(matrix.message == "the request space of 'doc' holds 9 requests, over 4: no matrix for it")
        #expect(diff.help == nil && matrix.help == nil && matrix.diagnostic.location == nil && matrix.diagnostic.help.isEmpty)
        #expect(diff.diagnostic.code == "space-too-large" && diff.diagnostic.severity == .warning)
    }

    @Test func spaceNotExhaustiveSaysWhatTheSamplingCosts() {
        let construct = "two paths compared"
        let invariants = SpaceNotExhaustive(space: "doc.read", construct: construct, check: .invariants(bound: 4), at: Self.here)
        #expect(invariants.message == "'doc.read' depends on two paths compared, which the request space only samples: its invariants are checked, not proved")
        #expect(invariants.help == "compare request values with literals (==, <, in ...) so every boundary can be tried")
        let diff = SpaceNotExhaustive(space: "doc.read", construct: construct, check: .diff, at: Self.here)
        #expect(diff.message == "'doc.read' depends on two paths compared: the diff samples it, other requests may change too")
        let matrix = SpaceNotExhaustive(space: "doc", construct: construct, check: .matrix(bound: 4), at: nil)
        #expect(matrix.message == "'doc' depends on two paths compared, which the request space only samples: the matrix shows a sample")
        #expect(diff.help == nil && matrix.help == nil && diff.diagnostic.code == "space-not-exhaustive")
    }

    @Test func invariantUnknownNameIsAnErrorWithTheNearestName() {
        let finding = InvariantUnknownName(
            invariant: "free-never-exports", kind: "tier", name: Located("fre", at: Self.here, length: 3), known: ["free", "pro"])
        #expect(finding.message == "unknown tier 'fre' in invariant 'free-never-exports'")
        #expect(finding.help == ["did you mean 'free'? Known tiers: free, pro"])
        #expect(finding.diagnostic.severity == .error && finding.diagnostic.code == "unknown-name" && finding.diagnostic.length == 3)
    }
}
