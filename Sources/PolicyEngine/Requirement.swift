import Foundation
import PolicyModel

// The one home of the requirement kinds an action can state: sign-in, auth, app role, membership, feature,
// limit and consent. Everything that differs by kind is written here, once:
//
// - the plan each kind compiles to (`AuthPlan`, `AppRolePlan`, ...),
// - the check `decide` runs (`DecisionTable.firstFailedRequirement`, the one evaluator switch) and the trace event
//   it records (`RequirementOutcome`, whose words are `RequirementOutcome.detail`, the one trace-event function),
// - the reasons a kind can deny with, the facts and placeholders its messages offer, and where its decision points,
// - its coverage label and which outcomes a request can reach, and the conditions it evaluates (the request space
//   and the lints read them).
//
// The compiler, `decide`, `explain`, coverage, the request space, the matrix and the message checks all ask this
// file. Adding a kind: a case of `Requirement`, its plan, its outcomes and its check here, the `Reason` it denies
// with in PolicyModel's contract, and its declaration in the compiler (see docs/architecture.md).

/// What one requirement of an action adds to the request space (`Requirement.spaceDemand`).
package enum SpaceDemand: Sendable {
    /// Nothing beyond the axes every space has (subjects signed out, anonymous and of each tier).
    case nothing
    /// The caller's standing towards the resource (non-member, owner, each member role).
    case standing
    /// How the caller signed in (any method when `methods` is empty) and, with `maxAge`, how long ago.
    case auth(methods: [String], maxAge: Double?)
    /// App roles whose presence changes the answer.
    case appRoles([String])
    /// A usage counter and its caps per tier (nil: unlimited).
    case counter(String, caps: [Int?])
    /// Conditions whose literals give the space its values.
    case conditions([CompiledCondition])
}

/// One requirement an action can state, in the order `decide` checks them.
package enum Requirement: Sendable, Hashable, CaseIterable {
    case signIn, auth, appRole, membership, feature, limit, consent

    /// The kind whose failure denies with `reason`; nil for the reasons no requirement gives (`allowed`,
    /// `default_deny`, `denied_by_rule`).
    package init?(denyingWith reason: Reason) {
        switch reason {
        case .unauthenticated: self = .signIn
        case .stepUpRequired: self = .auth
        case .roleRequired: self = .appRole
        case .notMember, .accessDenied, .ownerOnly: self = .membership
        case .requiresUpgrade: self = .feature
        case .limitExceeded: self = .limit
        case .consentRequired: self = .consent
        case .allowed, .defaultDeny, .deniedByRule: return nil
        }
    }

    /// Whether `action` states this requirement.
    package func isStated(in action: ActionPlan) -> Bool {
        switch self {
        case .signIn: action.signIn != nil
        case .auth: action.auth != nil
        case .appRole: action.appRoles != nil
        case .membership: action.membership != nil
        case .feature: action.feature != nil
        case .limit: action.limit != nil
        case .consent: action.consent != nil
        }
    }

    /// What the explain trace and coverage call it: "sign-in", "feature sync", "limit sources".
    package func label(in action: ActionPlan) -> String {
        switch self {
        case .signIn: "sign-in"
        case .auth: "auth"
        case .appRole: "app role"
        case .membership: "membership"
        case .feature: "feature \(action.feature?.id ?? "")"
        case .limit: "limit \(action.limit?.id ?? "")"
        case .consent: "consent"
        }
    }

    /// Where the action states it (coverage's location); nil when it does not. Feature and limit checks are
    /// written on the action (their declarations are elsewhere).
    package func statedAt(in action: ActionPlan) -> SourceLocation? {
        switch self {
        case .signIn: action.signIn
        case .auth: action.auth?.location
        case .appRole: action.appRoles?.location
        case .membership: action.membership?.location
        case .feature: action.feature.map { _ in action.location }
        case .limit: action.limit.map { _ in action.location }
        case .consent: action.consent?.location
        }
    }

    /// Where the check is written for the trace and the decision's `policy`: the requirement's own declaration
    /// (a limit's cap on `tier` when it has one).
    package func writtenAt(in action: ActionPlan, tier: Int? = nil) -> SourceLocation? {
        switch self {
        case .signIn: action.signIn
        case .auth: action.auth?.location
        case .appRole: action.appRoles?.location
        case .membership: action.membership?.location
        case .feature: action.feature?.location
        case .limit: action.limit.flatMap { limit in tier.flatMap { limit.capLocations[$0] } ?? limit.location }
        case .consent: action.consent?.location
        }
    }

    /// The reasons the action can be denied with by this requirement, in the order they are checked: exactly those
    /// `decide` can give (a membership open to every member never refuses a member's role).
    package func reasons(in action: ActionPlan) -> [Reason] {
        guard isStated(in: action) else { return [] }
        switch self {
        case .signIn: return [.unauthenticated]
        case .auth: return [.stepUpRequired]
        case .appRole: return [.roleRequired]
        case .membership:
            guard let membership = action.membership, !membership.openToMembers else { return [.notMember] }
            return [.notMember, membership.ownerOnly ? .ownerOnly : .accessDenied]
        case .feature: return [.requiresUpgrade]
        case .limit: return [.limitExceeded]
        case .consent: return [.consentRequired]
        }
    }

    /// Every reason the action's requirements can deny with, in check order.
    package static func reasons(in action: ActionPlan) -> [Reason] {
        allCases.flatMap { $0.reasons(in: action) }
    }

    /// Whether some request can end the check this way: a feature every tier has never fails, a limit capped at
    /// zero everywhere never passes, consent that can never be given never passes.
    package func canEnd(in action: ActionPlan, passed: Bool) -> Bool {
        switch self {
        case .feature:
            guard let feature = action.feature else { return false }
            return feature.tierHas.contains(passed)
        case .limit:
            guard let limit = action.limit else { return false }
            return passed ? limit.caps.contains { $0 != 0 } : limit.caps.contains { $0 != nil }
        case .consent:
            guard let consent = action.consent else { return false }
            guard let condition = consent.condition else { return !passed }
            return condition.constantValue.map { $0 == passed } ?? true
        case .signIn, .auth, .appRole, .membership:
            return isStated(in: action)
        }
    }

    /// Whether the action states this requirement so that nobody can pass it, on purpose: a consent written
    /// `when: false` (or a condition that folds to false). The lints do not call such an action a mistake.
    package func refusesEveryone(in action: ActionPlan) -> Bool {
        switch self {
        case .consent: action.consent != nil && !canEnd(in: action, passed: true)
        case .signIn, .auth, .appRole, .membership, .feature, .limit: false
        }
    }

    /// Whether the check reads the resource (its owner, members, usage or, through a condition, its attributes),
    /// so a plan (`CompiledPolicy.plan`) leaves it as a condition on the resource; the others the subject decides.
    package var readsResource: Bool {
        switch self {
        case .membership, .limit, .consent: true
        case .signIn, .auth, .appRole, .feature: false
        }
    }

    /// The check as a condition on the resource, for a kind that reads it (`readsResource`); nil when the action
    /// does not state it. `subject` is the signed-in subject's id; `condition` turns a compiled condition into its
    /// residual over the resource (a failure to evaluate counts as not passing).
    func residual(
        in action: ActionPlan, entry: ActionEntry, subject: String?, tier: Int, condition: (CompiledCondition) -> PlanExpression
    ) -> PlanExpression? {
        guard isStated(in: action) else { return nil }
        switch self {
        case .membership:
            // As `DecisionTable.standing`: the owner by the owner field, or a member whose role is the owner role or
            // grants the action (any role when the action is open to members); no standing without a subject id.
            guard let subject, let membership = action.membership else { return .or([]) }
            var parts: [PlanExpression] = []
            if let owner = entry.owner { parts.append(.ownerIsSubject(subject: subject, field: OwnerFieldName(owner))) }
            let roles = (entry.ownerRole.map { [$0] } ?? []) + membership.grantingRoles.sorted()
            parts.append(.memberRole(subject: subject, roles: membership.openToMembers ? nil : roles))
            return .or(parts)
        case .limit:
            guard let limit = action.limit, let cap = limit.caps[tier] else { return .and([]) }
            return .usageBelow(counter: limit.counter, limit: cap)
        case .consent:
            guard let compiled = action.consent?.condition else { return .or([]) }
            return condition(compiled)
        case .signIn, .auth, .appRole, .feature:
            return nil
        }
    }

    /// What the requirement, when the action states it, adds to the request space (`PolicyVerification`'s
    /// `RequestSpace`): the axis it reads and the values on it that change the answer. One exhaustive switch, so a new
    /// kind does not compile until it says what it adds (the space itself names no kind).
    package func spaceDemand(in action: ActionPlan) -> SpaceDemand {
        switch self {
        // The space always holds a signed-out and an anonymous subject, and every tier.
        case .signIn, .feature: .nothing
        case .auth: action.auth.map { .auth(methods: $0.methods, maxAge: $0.maxAge) } ?? .nothing
        case .appRole: action.appRoles.map { .appRoles($0.roles) } ?? .nothing
        case .membership: action.membership == nil ? .nothing : .standing
        case .limit: action.limit.map { .counter($0.counter, caps: $0.caps) } ?? .nothing
        case .consent: .conditions(conditions(in: action))
        }
    }

    /// The conditions the requirement evaluates (what the request space and the lints read beside the rules).
    package func conditions(in action: ActionPlan) -> [CompiledCondition] {
        switch self {
        case .consent: action.consent?.condition.map { [$0] } ?? []
        case .signIn, .auth, .appRole, .membership, .feature, .limit: []
        }
    }

    /// The built-in message for `reason` (one of this kind's), used where a policy sets none.
    package func defaultMessage(_ reason: Reason) -> String {
        switch reason {
        case .unauthenticated: "Sign in to continue."
        case .stepUpRequired: "Verify your identity to continue."
        case .roleRequired: "This requires the {roles} role."
        case .notMember: "You're not a member of this {resource}."
        case .ownerOnly: "Only the owner can perform this action."
        case .requiresUpgrade: "{feature} requires {tier}. Upgrade to unlock."
        case .limitExceeded: "You've reached the limit of {limit} {limitName}."
        case .consentRequired: "Your privacy settings don't allow sharing {consent}."
        default: "You don't have permission for this action."  // access_denied
        }
    }

    /// The placeholders a message for this kind's reasons can always fill (besides `{action}` and `{resource}`).
    package var placeholders: Set<Placeholder> {
        switch self {
        case .feature: [.feature, .tier, .price]
        case .limit: [.limit, .limitName, .used, .remaining, .tier, .price]
        case .appRole: [.role, .roles]
        case .auth: [.methods, .maxAge]
        case .consent: [.consent]
        case .signIn, .membership: []
        }
    }

    /// Of `placeholders`, those `action` cannot fill on some request: a limit with a tier nothing lifts has no
    /// `{tier}`, a tier without a price no `{price}`, auth without methods or a maximum age no `{methods}` or `{maxAge}`.
    package func unfillable(in action: ActionPlan, tiers: [TierPlan]) -> Set<Placeholder> {
        var missing: Set<Placeholder> = []
        switch self {
        case .limit:
            guard let limit = action.limit else { break }
            let capped = limit.caps.indices.filter { limit.caps[$0] != nil }
            if capped.contains(where: { limit.upgrades[$0] == nil }) { missing.formUnion([.tier, .price]) }
            if capped.contains(where: { limit.upgrades[$0].map { tiers[$0].price == nil } ?? true }) { missing.insert(.price) }
        case .feature:
            if let feature = action.feature, tiers[feature.upgradeTo].price == nil { missing.insert(.price) }
        case .auth:
            if action.auth?.methods.isEmpty ?? true { missing.insert(.methods) }
            if action.auth?.maxAge == nil { missing.insert(.maxAge) }
        case .signIn, .appRole, .membership, .consent:
            break
        }
        return missing
    }

    /// Fills in the facts this kind's deny messages show; `tier` and `used` matter only to a limit.
    package func fill(_ facts: inout MessageFacts, action: ActionPlan, tiers: [TierPlan], tier: Int, used: Int) {
        switch self {
        case .auth:
            facts.methods = action.auth?.methods ?? []
            facts.maxAge = action.auth?.maxAge.map(CompiledPolicy.formatDuration)
        case .appRole:
            facts.roles = action.appRoles?.displayNames ?? []
        case .feature:
            if let feature = action.feature {
                let upgrade = tiers[feature.upgradeTo]
                facts.feature = feature.name
                facts.tier = upgrade.name
                facts.price = upgrade.price
            }
        case .limit:
            if let limit = action.limit {
                let upgrade = limit.upgrades[tier].map { tiers[$0] }
                facts.limit = limit.caps[tier]
                facts.limitName = limit.name
                facts.used = used
                facts.remaining = 0
                facts.tier = upgrade?.name
                facts.price = upgrade?.price
            }
        case .consent:
            facts.consent = action.consent?.name
        case .signIn, .membership:
            break
        }
    }

    /// The deny this kind gives with `reason` and a rendered message: where it points and the tier it offers.
    /// A limit's figures (`limit`, `used`, `remaining`) depend on the request and are set by `decide`.
    package func deny(_ reason: Reason, message: String, action: ActionPlan, tiers: [TierPlan], tier: Int = 0) -> Decision {
        switch self {
        case .feature:
            let upgrade = action.feature.map { tiers[$0.upgradeTo].id }
            return Decision(effect: .deny, reason: reason, message: message, upgradeTo: upgrade, policy: writtenAt(in: action))
        case .limit:
            let upgrade = action.limit.flatMap { $0.upgrades[tier] }.map { tiers[$0].id }
            return Decision(effect: .deny, reason: reason, message: message, upgradeTo: upgrade, policy: writtenAt(in: action, tier: tier))
        case .signIn, .auth, .appRole, .membership, .consent:
            return Decision(effect: .deny, reason: reason, message: message, policy: writtenAt(in: action))
        }
    }
}

// MARK: - Plans

/// One action of one resource type: its requirements in the order they are checked, and its rules.
package struct ActionPlan: Sendable {
    package let name: String
    package let resourceType: String
    package let location: SourceLocation
    /// Where sign-in is required (explicitly, or implied by auth, app roles or membership); nil when not.
    package let signIn: SourceLocation?
    package let auth: AuthPlan?
    package let appRoles: AppRolePlan?
    package let membership: MembershipPlan?
    package let feature: FeaturePlan?
    package let limit: LimitPlan?
    package let consent: ConsentPlan?
    package let denyRules: [Int]
    package let allowRules: [Int]
    /// Message per reason, already resolved from action, resource type, set and built-in defaults.
    package let messages: [Reason: MessageTemplate]

    package init(
        name: String, resourceType: String, location: SourceLocation, requirements: RequirementPlans, denyRules: [Int], allowRules: [Int],
        messages: [Reason: MessageTemplate]
    ) {
        self.name = name
        self.resourceType = resourceType
        self.location = location
        self.signIn = requirements.signIn
        self.auth = requirements.auth
        self.appRoles = requirements.appRoles
        self.membership = requirements.membership
        self.feature = requirements.feature
        self.limit = requirements.limit
        self.consent = requirements.consent
        self.denyRules = denyRules
        self.allowRules = allowRules
        self.messages = messages
    }
}

/// What the compiler builds for each kind an action states (nil: not stated), before the action's rules and messages.
package struct RequirementPlans: Sendable {
    package var signIn: SourceLocation?
    package var auth: AuthPlan?
    package var appRoles: AppRolePlan?
    package var membership: MembershipPlan?
    package var feature: FeaturePlan?
    package var limit: LimitPlan?
    package var consent: ConsentPlan?
    package init() {}
}

/// An auth requirement: any of `methods` (any method when empty), verified within `maxAge` seconds when set.
package struct AuthPlan: Sendable {
    package let methods: [String]
    package let maxAge: Double?
    package let location: SourceLocation
    package init(methods: [String], maxAge: Double?, location: SourceLocation) {
        self.methods = methods
        self.maxAge = maxAge
        self.location = location
    }
}

package struct AppRolePlan: Sendable {
    /// Any one of these app roles satisfies the requirement.
    package let roles: [String]
    package let displayNames: [String]
    package let location: SourceLocation
    package init(roles: [String], displayNames: [String], location: SourceLocation) {
        self.roles = roles
        self.displayNames = displayNames
        self.location = location
    }
}

package struct MembershipPlan: Sendable {
    /// Member roles (with inheritance applied) that may take the action.
    package let grantingRoles: Set<String>
    /// Every member may take the action whatever their role.
    package let openToMembers: Bool
    /// Only ownership grants the action, so a member lacking it is told `owner_only`.
    package let ownerOnly: Bool
    package let location: SourceLocation
    package init(grantingRoles: Set<String>, openToMembers: Bool, ownerOnly: Bool, location: SourceLocation) {
        self.grantingRoles = grantingRoles
        self.openToMembers = openToMembers
        self.ownerOnly = ownerOnly
        self.location = location
    }
}

package struct FeaturePlan: Sendable {
    package let id: String
    package let name: String
    /// Indexed by tier: whether the tier has the feature.
    package let tierHas: [Bool]
    package let upgradeTo: Int
    package let location: SourceLocation
    package init(id: String, name: String, tierHas: [Bool], upgradeTo: Int, location: SourceLocation) {
        self.id = id
        self.name = name
        self.tierHas = tierHas
        self.upgradeTo = upgradeTo
        self.location = location
    }
}

package struct LimitPlan: Sendable {
    package let id: String
    package let name: String
    package let counter: String
    /// Indexed by tier: the cap, nil for unlimited.
    package let caps: [Int?]
    /// Indexed by tier: the tier that lifts the cap, if any.
    package let upgrades: [Int?]
    /// Indexed by tier: where the cap is written (the decision points there).
    package let capLocations: [SourceLocation?]
    package let location: SourceLocation
    package init(
        id: String, name: String, counter: String, caps: [Int?], upgrades: [Int?], capLocations: [SourceLocation?],
        location: SourceLocation
    ) {
        self.id = id
        self.name = name
        self.counter = counter
        self.caps = caps
        self.upgrades = upgrades
        self.capLocations = capLocations
        self.location = location
    }
}

package struct ConsentPlan: Sendable {
    package let name: String
    /// nil: consent can never be given.
    package let condition: CompiledCondition?
    package let location: SourceLocation
    package init(name: String, condition: CompiledCondition?, location: SourceLocation) {
        self.name = name
        self.condition = condition
        self.location = location
    }
}

// MARK: - Outcomes (the trace event of a check)

/// How one requirement came out, with the request facts its explain line shows.
package enum RequirementOutcome: Sendable, Hashable {
    case signedIn
    case signedOut
    case authSatisfied
    /// The subject verified by another method (its name), or not at all.
    case authMethodRefused(verifiedBy: String?)
    /// Verification older than the action's `maxAge`, or missing.
    case authStale
    case appRoleHeld
    case appRoleMissing
    case owner
    /// A member whose role (by name) grants the action.
    case roleGrants(String)
    /// A member whose role does not grant it: `owner_only` or `access_denied`.
    case roleRefused(String, Reason)
    case notMember
    /// The effective tier (index) has the feature, or lacks it.
    case featureHeld(tier: Int)
    case featureMissing(tier: Int)
    case withinLimit(used: Int, cap: Int)
    /// The effective tier (index) has no cap.
    case unlimited(tier: Int)
    case limitReached(used: Int, cap: Int)
    case consented
    /// A consent written `when: false`.
    case consentNeverGiven
    case consentRefused

    /// Which requirement this is an outcome of.
    package var requirement: Requirement {
        switch self {
        case .signedIn, .signedOut: .signIn
        case .authSatisfied, .authMethodRefused, .authStale: .auth
        case .appRoleHeld, .appRoleMissing: .appRole
        case .owner, .roleGrants, .roleRefused, .notMember: .membership
        case .featureHeld, .featureMissing: .feature
        case .withinLimit, .unlimited, .limitReached: .limit
        case .consented, .consentNeverGiven, .consentRefused: .consent
        }
    }

    /// The deny reason when the requirement failed; nil when it passed.
    package var failure: Reason? {
        switch self {
        case .signedIn, .authSatisfied, .appRoleHeld, .owner, .roleGrants, .featureHeld, .withinLimit, .unlimited, .consented: nil
        case .signedOut: .unauthenticated
        case .authMethodRefused, .authStale: .stepUpRequired
        case .appRoleMissing: .roleRequired
        case .roleRefused(_, let reason): reason
        case .notMember: .notMember
        case .featureMissing: .requiresUpgrade
        case .limitReached: .limitExceeded
        case .consentNeverGiven, .consentRefused: .consentRequired
        }
    }

    package var passed: Bool { failure == nil }

    /// The explain line's check name: the reason when it failed, the requirement's label when it passed.
    func check(in action: ActionPlan) -> String {
        failure?.rawValue ?? requirement.label(in: action)
    }

    /// The explain line's words.
    func detail(_ entry: ActionEntry, tiers: [TierPlan]) -> String {
        let action = entry.plan
        switch self {
        case .signedIn: return "signed in"
        case .signedOut: return "sign-in required, subject is signed out"
        case .authSatisfied: return "method and freshness satisfied"
        case .authMethodRefused(let method): return "needs \(entry.authMethods.joined(separator: " or ")), verified by \(method ?? "nothing")"
        case .authStale: return "verification older than \(CompiledPolicy.formatDuration(entry.authMaxAge ?? 0)) or missing"
        case .appRoleHeld: return "has \((entry.appRoles ?? []).joined(separator: " or "))"
        case .appRoleMissing: return "needs app role \((entry.appRoles ?? []).joined(separator: " or "))"
        case .owner: return "owner"
        case .roleGrants(let role): return "role '\(role)' grants '\(action.name)'"
        case .roleRefused(let role, _): return "role '\(role)' does not grant '\(action.name)'"
        case .notMember: return "subject is not a member"
        case .featureHeld(let tier): return "tier '\(tiers[tier].id)' has it"
        case .featureMissing(let tier): return "tier '\(tiers[tier].id)' lacks feature '\(action.feature?.id ?? "")'"
        case .withinLimit(let used, let cap): return "\(used) of \(cap) used"
        case .unlimited(let tier): return "unlimited on '\(tiers[tier].id)'"
        case .limitReached(let used, let cap): return "\(used) of \(cap) \(entry.limitCounter) used"
        case .consented: return action.consent?.condition?.source ?? ""
        case .consentNeverGiven: return "consent can never be given"
        case .consentRefused: return "privacy settings do not consent"
        }
    }
}

// MARK: - The check (the one evaluator)

/// Which requirement failed: plain values, so nothing is copied until the decision is built.
struct RequirementFailure {
    var reason: Reason
    /// The count used, for `limit_exceeded`.
    var used: Int = 0
}

extension DecisionTable {
    /// The first requirement of the action the request fails, as a deny without its message yet; nil when all pass.
    /// Each kind's check in the order `Requirement` lists them, each recording its `RequirementOutcome`.
    @inline(__always)
    func firstFailedRequirement<Input: DecideInput, T: Tracer>(
        _ request: Input, entry: ActionEntry, signedIn: Bool, now: Date, tier: Int, isOwner: Bool, role: Input.Role?, tracer: inout T,
        evaluate: (ConditionNode) -> ConditionValue?
    ) -> RequirementFailure? {
        let action = entry.plan
        func fail(_ outcome: @autoclosure () -> RequirementOutcome, _ reason: Reason, at location: @autoclosure () -> SourceLocation?) -> RequirementFailure {
            tracer.record(.requirement(outcome(), at: location()))
            return RequirementFailure(reason: reason)
        }

        // Requirement data comes from the entry's flat fields; the plan's structs are read only for traces.
        if entry.needsSignIn {
            guard signedIn else { return fail(.signedOut, .unauthenticated, at: action.signIn) }
            tracer.record(.requirement(.signedIn, at: action.signIn))
        }

        if entry.hasAuth {
            if !entry.authMethods.isEmpty, !request.authMethodSatisfies(entry) {
                return fail(.authMethodRefused(verifiedBy: request.authMethodName), .stepUpRequired, at: action.auth?.location)
            }
            if let maxAge = entry.authMaxAge {
                guard let at = request.verifiedAt, now.timeIntervalSince(at) <= maxAge else {
                    return fail(.authStale, .stepUpRequired, at: action.auth?.location)
                }
            }
            tracer.record(.requirement(.authSatisfied, at: action.auth?.location))
        }

        if entry.appRoles != nil {
            guard request.holdsAppRole(entry) else { return fail(.appRoleMissing, .roleRequired, at: action.appRoles?.location) }
            tracer.record(.requirement(.appRoleHeld, at: action.appRoles?.location))
        }
        guard entry.checksPastAppRoles else { return nil }

        if entry.hasMembership {
            if isOwner {
                tracer.record(.requirement(.owner, at: action.membership?.location))
            } else if let role {
                guard entry.openToMembers || request.grants(entry, role) else {
                    let reason: Reason = entry.ownerOnly ? .ownerOnly : .accessDenied
                    return fail(.roleRefused(request.name(of: role, entry: entry, self), reason), reason, at: action.membership?.location)
                }
                tracer.record(.requirement(.roleGrants(request.name(of: role, entry: entry, self)), at: action.membership?.location))
            } else {
                return fail(.notMember, .notMember, at: action.membership?.location)
            }
        }

        if let tierHas = entry.featureTierHas {
            guard tierHas[tier] else { return fail(.featureMissing(tier: tier), .requiresUpgrade, at: action.feature?.location) }
            tracer.record(.requirement(.featureHeld(tier: tier), at: action.feature?.location))
        }

        if let caps = entry.limitCaps {
            if let cap = caps[tier] {
                let used = request.usedCount(entry)
                if used >= cap {
                    var failure = fail(
                        .limitReached(used: used, cap: cap), .limitExceeded, at: action.limit.flatMap { $0.capLocations[tier] ?? $0.location })
                    failure.used = used
                    return failure
                }
                tracer.record(.requirement(.withinLimit(used: used, cap: cap), at: action.limit?.location))
            } else {
                tracer.record(.requirement(.unlimited(tier: tier), at: action.limit?.location))
            }
        }

        if entry.hasConsent {
            guard let root = entry.consentCondition, case .bool(true)? = evaluate(root) else {
                return fail(entry.consentCondition == nil ? .consentNeverGiven : .consentRefused, .consentRequired, at: action.consent?.location)
            }
            tracer.record(.requirement(.consented, at: action.consent?.location))
        }
        return nil
    }
}
