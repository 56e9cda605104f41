import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing

/// `explain`'s events say what the engine did as values; its words are rendered from them.
@Suite struct TraceEventTests {
    static let now = RuleHomesTests.now
    /// RuleHomesTests' set: `big` (deny on `pay`) and `small` (allow on `refund`) read an attribute a request may lack.
    static let policy = RuleHomesTests.policy

    func explain(_ action: String, subject: Subject = Subject(id: "u"), amount: Int? = nil) throws -> Explanation {
        let policy = try #require(Self.policy)
        let attributes: [String: Value] = amount.map { ["amount": .int($0)] } ?? [:]
        return policy.explain(Request(
            subject: subject, action: action, resource: Resource(type: "doc", attributes: attributes), context: Context(now: Self.now)))
    }

    /// An erroring condition is an error in the event (nil), whatever the words say: a deny rule's reads "matched".
    @Test func anErroringConditionIsToldApartFromAMatch() throws {
        let denied = try explain("pay")
        #expect(denied.events.contains(.rule(index: 0, condition: nil, applies: true)))
        #expect(denied.trace.contains(TraceStep(check: "deny rule big", outcome: .fail, detail: "matched", location: denied.decision.policy)))
        #expect(TraceEvent.decidingRule(in: denied.events) == 0)

        let matched = try explain("pay", amount: 9)
        #expect(matched.events.contains(.rule(index: 0, condition: true, applies: true)))

        let refused = try explain("refund", subject: Subject())
        #expect(refused.events.contains(.rule(index: 1, condition: nil, applies: false)))
        #expect(refused.events.contains(.requirement(.signedOut, at: refused.decision.policy)))
        #expect(TraceEvent.decidingRule(in: refused.events) == nil)
    }

    /// One event per trace line, in order, and every requirement outcome names its requirement and result.
    @Test func everyTraceLineHasItsEvent() throws {
        for (action, subject) in [("sync", Subject(id: "u")), ("sync", Subject(id: "u", tier: "pro")), ("pay", Subject()), ("refund", Subject(id: "u"))] {
            let explanation = try explain(action, subject: subject, amount: 1)
            #expect(explanation.events.count == explanation.trace.count)
            for (event, step) in zip(explanation.events, explanation.trace) {
                guard case .requirement(let outcome, let location) = event else { continue }
                #expect(step.location == location)
                #expect(step.outcome == (outcome.passed ? .pass : .fail))
                if let reason = outcome.failure { #expect(step.check == reason.rawValue) }
            }
        }
        let lacking = try explain("sync")
        #expect(lacking.events.contains { if case .requirement(.featureMissing, _) = $0 { true } else { false } })
        let requirements: [Requirement] = lacking.events.compactMap { event -> Requirement? in
            guard case .requirement(let outcome, _) = event else { return nil }
            return outcome.requirement
        }
        #expect(requirements == [.feature])
    }

    @Test func anUnknownPairIsOneEvent() throws {
        let policy = try #require(Self.policy)
        let unknownType = policy.explain(Request(subject: Subject(), action: "pay", resource: Resource(type: "folder")))
        #expect(unknownType.events == [.unknownResourceType("folder")])
        let unknownAction = policy.explain(Request(subject: Subject(), action: "fly", resource: Resource(type: "doc")))
        #expect(unknownAction.events == [.unknownAction("fly", type: "doc")])
        #expect(unknownAction.trace.map(\.detail) == ["'fly' is not an action of 'doc'"])
    }
}
