import Foundation
import PolicyModel

/// One action of one resource type, with what `decide` needs beside the plan, computed once.
final class ActionEntry: Sendable {
    let plan: ActionPlan
    let typeName: String
    let owner: OwnerField?
    let ownerRole: String?
    /// Whether the subject's standing (owner, member role) matters: a membership requirement, or a condition
    /// that may read `resource.role`. When not, `decide` skips the owner and member lookups.
    let needsStanding: Bool
    /// Whether a condition of the action may read `resource.role`, so its input needs the role's name.
    let conditionsReadRole: Bool
    /// Whether any condition is evaluated for this action (rules or consent).
    let hasConditions: Bool
    /// The consent's condition as a `ConsentTest`, when it compiles to one.
    let consentTest: ConsentTest?
    /// Whether `decide` builds an `EvaluationInput`: a rule has a condition, or the consent's has no `ConsentTest`.
    let needsConditionInput: Bool
    /// The membership plan's granting roles as a list, searched linearly when short.
    let grantingRoles: [String]
    /// The same and the app roles and auth methods the action accepts, as `SmallName`s (zero words for a name that
    /// is not one), and whether every one of the names is ASCII (so a small request name compares by words).
    let grantingSmall: [SmallName]
    let grantingASCII: Bool
    let appRoleSmall: [SmallName]
    let appRolesASCII: Bool
    let authMethodSmall: [SmallName]
    let authMethodsASCII: Bool
    /// The condition roots of `plan.denyRules`, `plan.allowRules` and the consent, in order: an indirect enum
    /// is one reference, so reading one does not copy a whole `CompiledCondition`.
    let denyConditions: [ConditionNode?]
    let allowConditions: [ConditionNode?]
    let consentCondition: ConditionNode?
    // The plan's requirements, flattened so checking one copies no struct out of the plan.
    let needsSignIn: Bool
    let hasAuth: Bool
    let authMethods: [String]
    let authMaxAge: Double?
    let appRoles: [String]?
    let hasMembership: Bool
    let openToMembers: Bool
    let ownerOnly: Bool
    let featureTierHas: [Bool]?
    let limitCaps: [Int?]?
    let limitCounter: String
    let hasConsent: Bool
    /// Whether any requirement after the app roles applies (membership, feature, limit, consent): when not, the
    /// requirement checks stop after the app roles with one test instead of four (issue 41, round six).
    let checksPastAppRoles: Bool
    /// Deny messages rendered with this action's facts, by reason; absent where a fact varies per request.
    let messages: [(reason: Reason, text: String)]
    /// The message of each deny rule, in `plan.denyRules` order.
    let denyRuleMessages: [String]
    /// `limit_exceeded` per effective tier, when the template does not show `{used}`.
    let limitMessages: [String?]
    /// The allow decision (pointing at the action), before any limit figures are filled in.
    let allowDecision: Decision
    /// The finished deny decision of each reason whose message is fixed, so a deny is a copy, not a build.
    let denyDecisions: [Decision]
    /// The index in `denyDecisions` of each reason's deny (its first in `messages`), by `Reason.ordinal`; -1 for
    /// none: `denyDecision(_:)` reads it instead of scanning `messages` (issue 41, round six).
    let denyDecisionIndex: [Int8]
    /// The finished deny decision of each deny rule, in `plan.denyRules` order.
    let denyRuleDecisions: [Decision]
    /// The allow decision of each allow rule, in `plan.allowRules` order.
    let allowRuleDecisions: [Decision]
    /// `limit_exceeded` per effective tier, message, tier to upgrade to and location built, where `limitMessages` has
    /// the message: `decide` fills in the figures only.
    let limitDecisions: [Decision?]
    // The requirements in the vocabulary's ids, for `InternedRequest`s.
    /// The app roles that satisfy the requirement; nil when there is none.
    let appRoleIDs: AppRoleSet?
    /// Member role ids the membership plan grants, and the owner role's id (-1 when the type has none).
    let grantingRoleIDs: [Int32]
    let ownerRoleID: Int32
    /// Bit i set: `AuthMethod.all[i]` satisfies the auth requirement.
    let authMethodBits: UInt8
    // What `plan` writes, built once: the owner field, the member roles a membership grants (the owner role first,
    // then the granting roles sorted; nil when every member may), and each condition's source as written.
    let planOwnerField: OwnerFieldName?
    let planMemberRoles: [String]?
    let denySources: [String]
    let allowSources: [String]
    let consentSource: String

    init(
        plan: ActionPlan, type: ResourceTypePlan, rules: [RulePlan], tiers: [TierPlan], messages: [(Reason, String)], ruleMessages: [String],
        limitMessages: [String?], appRoleNames: NameTable, memberRoleNames: NameTable
    ) {
        self.plan = plan
        self.typeName = type.name
        self.owner = type.owner
        self.ownerRole = type.ownerRole
        let conditions = !plan.denyRules.isEmpty || !plan.allowRules.isEmpty || plan.consent?.condition != nil
        self.hasConditions = conditions
        self.denyConditions = plan.denyRules.map { rules[$0].condition?.root }
        self.allowConditions = plan.allowRules.map { rules[$0].condition?.root }
        self.consentCondition = plan.consent?.condition?.root
        let consentTest = plan.consent?.condition.flatMap { ConsentTest($0.root) }
        self.consentTest = consentTest
        self.needsConditionInput = !plan.denyRules.allSatisfy { rules[$0].condition == nil } || !plan.allowRules.allSatisfy { rules[$0].condition == nil }
            || (plan.consent?.condition != nil && consentTest == nil)
        let readsRole = (denyConditions + allowConditions + [consentCondition]).contains { $0?.reads(.resourceRole) ?? false }
        self.conditionsReadRole = readsRole
        self.needsStanding = plan.membership != nil || readsRole
        self.grantingRoles = plan.membership.map { Array($0.grantingRoles) } ?? []
        (self.grantingSmall, self.grantingASCII) = SmallName.list(grantingRoles)
        (self.appRoleSmall, self.appRolesASCII) = SmallName.list(plan.appRoles?.roles ?? [])
        (self.authMethodSmall, self.authMethodsASCII) = SmallName.list(plan.auth?.methods ?? [])
        self.needsSignIn = plan.signIn != nil
        self.hasAuth = plan.auth != nil
        self.authMethods = plan.auth?.methods ?? []
        self.authMaxAge = plan.auth?.maxAge
        self.appRoles = plan.appRoles?.roles
        self.hasMembership = plan.membership != nil
        self.openToMembers = plan.membership?.openToMembers ?? false
        self.ownerOnly = plan.membership?.ownerOnly ?? false
        self.featureTierHas = plan.feature?.tierHas
        self.limitCaps = plan.limit?.caps
        self.limitCounter = plan.limit?.counter ?? ""
        self.hasConsent = plan.consent != nil
        self.checksPastAppRoles = plan.membership != nil || plan.feature != nil || plan.limit != nil || plan.consent != nil
        self.messages = messages.map { (reason: $0.0, text: $0.1) }
        self.denyRuleMessages = ruleMessages
        self.limitMessages = limitMessages
        // Built once, returned many times: their texts are interned, so returning one retains nothing.
        self.allowDecision = Decision(effect: .allow, reason: .allowed, policy: plan.location).interned
        self.denyDecisions = messages.map { reason, message in
            Self.deny(reason, message: message, plan: plan, tiers: tiers).interned
        }
        var denyDecisionIndex = [Int8](repeating: -1, count: Reason.allCases.count)
        for (i, message) in messages.enumerated().reversed() where i < Int(Int8.max) {
            denyDecisionIndex[message.0.ordinal] = Int8(i)
        }
        self.denyDecisionIndex = denyDecisionIndex
        self.denyRuleDecisions = zip(plan.denyRules, ruleMessages).map { index, message in
            Decision(effect: .deny, reason: .deniedByRule, message: message, policy: rules[index].location).interned
        }
        self.allowRuleDecisions = plan.allowRules.map { Decision(effect: .allow, reason: .allowed, policy: rules[$0].location).interned }
        self.limitDecisions = limitMessages.indices.map { tier in
            guard let message = limitMessages[tier], plan.limit != nil else { return nil }
            return Requirement.limit.deny(.limitExceeded, message: message, action: plan, tiers: tiers, tier: tier).interned
        }
        self.appRoleIDs = plan.appRoles.map { required in
            var set = AppRoleSet()
            for role in required.roles { appRoleNames.index(of: role).map { set.insert(AppRoleID(Int32($0))) } }
            return set
        }
        self.grantingRoleIDs = (plan.membership.map { Array($0.grantingRoles) } ?? []).compactMap {
            memberRoleNames.index(of: $0).map(Int32.init)
        }
        self.ownerRoleID = type.ownerRole.flatMap { memberRoleNames.index(of: $0) }.map(Int32.init) ?? -1
        self.authMethodBits = (plan.auth?.methods ?? []).reduce(0) { bits, method in
            bits | (AuthMethod.all.firstIndex(of: method).map { UInt8(1) << UInt8($0) } ?? 0)
        }
        self.planOwnerField = type.owner.map(OwnerFieldName.init)
        self.planMemberRoles = plan.membership.flatMap { membership in
            membership.openToMembers ? nil : (type.ownerRole.map { [$0] } ?? []) + membership.grantingRoles.sorted()
        }
        self.denySources = plan.denyRules.map { rules[$0].condition?.source ?? "" }
        self.allowSources = plan.allowRules.map { rules[$0].condition?.source ?? "" }
        self.consentSource = plan.consent?.condition?.source ?? ""
    }

    /// Whether a member with role id `role` is granted the action by role.
    @inline(__always)
    func grants(roleID role: Int32) -> Bool {
        for granting in grantingRoleIDs where granting == role { return true }
        return false
    }

    /// The deny for a failed requirement, by the kind that denies with `reason` (a limit's figures left unset).
    static func deny(_ reason: Reason, message: String, plan: ActionPlan, tiers: [TierPlan], tier: Int = 0) -> Decision {
        (Requirement(denyingWith: reason) ?? .membership).deny(reason, message: message, action: plan, tiers: tiers, tier: tier)
    }

    /// The finished deny for `reason` when its message is fixed.
    @inline(__always)
    func denyDecision(_ reason: Reason) -> Decision? {
        let i = Int(denyDecisionIndex[reason.ordinal])
        if i >= 0 { return denyDecisions[i].copied }
        // Past `Int8.max` messages (never in practice) the rest are found by a scan.
        guard messages.count > Int(Int8.max) else { return nil }
        for i in messages.indices where messages[i].reason == reason { return denyDecisions[i] }
        return nil
    }

    /// Whether a member with `role` is granted the action by role.
    @inline(__always)
    func grants(_ role: String) -> Bool {
        if grantingASCII, let small = SmallName(role) {
            for granting in grantingSmall where granting == small { return true }
            return false
        }
        if grantingRoles.count <= 8 {
            for granting in grantingRoles where granting == role { return true }
            return false
        }
        return plan.membership?.grantingRoles.contains(role) ?? false
    }

    /// The pre-rendered message for `reason` at effective tier `tier`, if there is one.
    @inline(__always)
    func renderedMessage(_ reason: Reason, tier: Int) -> String? {
        if reason == .limitExceeded { return tier < limitMessages.count ? limitMessages[tier] : nil }
        for entry in messages where entry.reason == reason { return entry.text }
        return nil
    }
}
