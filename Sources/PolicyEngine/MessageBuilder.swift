import Foundation
import PolicyModel

/// The facts each deny reason of an action offers its message. Only `limit_exceeded` depends on the request
/// (the count used, and through the effective tier the cap and the tier that lifts it).
struct MessageBuilder {
    let plan: ActionPlan
    let type: ResourceTypePlan
    let tiers: [TierPlan]
    let rules: [RulePlan]
    let defaultDenyMessage: MessageTemplate

    /// The facts for `reason`, filled in by the kind that denies with it; `tier` and `used` matter only to `limit_exceeded`.
    static func facts(_ reason: Reason, plan: ActionPlan, typeName: String, tiers: [TierPlan], tier: Int, used: Int) -> MessageFacts {
        var facts = MessageFacts(action: plan.name, resource: typeName)
        Requirement(denyingWith: reason)?.fill(&facts, action: plan, tiers: tiers, tier: tier, used: used)
        return facts
    }

    /// The template a failed requirement shows.
    static func template(_ reason: Reason, plan: ActionPlan, defaultDenyMessage: MessageTemplate) -> MessageTemplate {
        plan.messages[reason] ?? defaultDenyMessage
    }

    /// The rendered message of every reason the action can be denied with whose facts are fixed.
    func messages(_ intern: (String) -> String) -> [(Reason, String)] {
        // A limit's message depends on the tier (and may show `{used}`): `limitMessages` renders it.
        Requirement.reasons(in: plan).filter { $0 != .limitExceeded }.map { reason in
            let facts = Self.facts(reason, plan: plan, typeName: type.name, tiers: tiers, tier: 0, used: 0)
            return (reason, intern(Self.template(reason, plan: plan, defaultDenyMessage: defaultDenyMessage).render(facts)))
        }
    }

    /// `limit_exceeded` per tier where the tier has a cap and the template does not show `{used}`.
    func limitMessages(_ intern: (String) -> String) -> [String?] {
        guard let limit = plan.limit else { return [] }
        let template = Self.template(.limitExceeded, plan: plan, defaultDenyMessage: defaultDenyMessage)
        if template.placeholders.contains(.used) { return [] }
        return tiers.indices.map { tier in
            guard limit.caps[tier] != nil else { return nil }
            return intern(template.render(Self.facts(.limitExceeded, plan: plan, typeName: type.name, tiers: tiers, tier: tier, used: 0)))
        }
    }

    /// The message each deny rule of the action shows when it matches.
    func denyRuleMessages(_ intern: (String) -> String) -> [String] {
        plan.denyRules.map { intern(Self.ruleMessage(rules[$0], plan: plan, typeName: type.name, defaultDenyMessage: defaultDenyMessage)) }
    }

    static func ruleMessage(_ rule: RulePlan, plan: ActionPlan, typeName: String, defaultDenyMessage: MessageTemplate) -> String {
        var facts = MessageFacts(action: plan.name, resource: typeName)
        facts.rule = rule.name
        let template = rule.message ?? plan.messages[.deniedByRule] ?? defaultDenyMessage
        return template.render(facts)
    }
}
