import Foundation
import PolicyModel

/// An immutable, compiled policy set: answers `decide` with no I/O, no locks and no parsing.
///
/// Built by `PolicyCompiler`; safe to share across threads. Reloading builds a new one.
public struct CompiledPolicy: Sendable {
    /// The set's name (its folder name).
    public let name: String
    /// SHA-256 over the set's files, so every decision log can name the exact policy that decided.
    public let contentHash: String
    /// Everything else lives in one immutable object, so copying a policy (out of a lock, into a task) is one retain.
    let table: DecisionTable

    package init(
        name: String, contentHash: String, tiers: [TierPlan], defaultTier: Int, productTiers: [String: String],
        resourceTypes: [String: ResourceTypePlan], rules: [RulePlan], defaultDenyMessage: MessageTemplate
    ) {
        self.name = name
        self.contentHash = contentHash
        self.table = DecisionTable(
            tiers: tiers, defaultTier: defaultTier, productTiers: productTiers, resourceTypes: resourceTypes, rules: rules,
            defaultDenyMessage: defaultDenyMessage)
    }

    package var tiers: [TierPlan] { table.tiers }
    package var tierIndex: [String: Int] { table.tierIndex }
    package var defaultTier: Int { table.defaultTier }
    /// Store product id to tier id.
    public var productTiers: [String: String] { table.productTiers }
    package var resourceTypes: [String: ResourceTypePlan] { table.resourceTypes }
    /// Every rule in source order; actions hold indexes into it.
    package var rules: [RulePlan] { table.rules }
    package var defaultDenyMessage: MessageTemplate { table.defaultDenyMessage }

    /// Tier ids in upgrade order.
    public var tierIDs: [String] { tiers.map(\.id) }
    /// The id of the tier signed-out, anonymous and lapsed subjects get.
    public var defaultTierID: String { tiers[defaultTier].id }
    /// Resource type names, sorted.
    public var resourceTypeNames: [String] { resourceTypes.keys.sorted() }
    /// The resource types with member roles (shared spaces), sorted: the only types `POST /v1/spaces` may
    /// create, and the only ones whose stored owner, members and usage a decision reads.
    public var sharedResourceTypes: [String] { table.sharedResourceTypes }
    /// The same, as a set (built once with the policy).
    public var sharedResourceTypeSet: Set<String> { table.sharedResourceTypeSet }
    /// Whether `type` is declared with member roles (a shared space).
    public func isSharedResourceType(_ type: String) -> Bool { table.sharedResourceTypeSet.contains(type) }
    /// The actions of a resource type, sorted; empty for an unknown type.
    public func actionNames(of type: String) -> [String] { resourceTypes[type]?.actions.keys.sorted() ?? [] }
    /// The tier a store product id unlocks.
    public func tier(forProduct productID: String) -> String? { productTiers[productID] }
}

package struct TierPlan: Sendable {
    package let id: String
    package let name: String
    package let price: String?
    package init(id: String, name: String, price: String?) {
        self.id = id
        self.name = name
        self.price = price
    }
}

package struct ResourceTypePlan: Sendable {
    package let name: String
    package let actions: [String: ActionPlan]
    /// The request field naming the owner: `ownerId` or an attribute.
    package let owner: OwnerField?
    package let ownerRole: String?
    package let roleNames: [String]

    package init(name: String, actions: [String: ActionPlan], owner: OwnerField?, ownerRole: String?, roleNames: [String]) {
        self.name = name
        self.actions = actions
        self.owner = owner
        self.ownerRole = ownerRole
        self.roleNames = roleNames
    }
}

package enum OwnerField: Sendable, Hashable {
    case ownerId
    case attribute(String)

    /// Whether `id` is the resource's owner by this field: the `ownerId` compared in place, with no copy of it.
    @inline(__always)
    func isOwner(_ id: String, of resource: Resource) -> Bool {
        switch self {
        case .ownerId:
            guard let ownerID = resource.ownerId else { return false }
            return SmallName.equal(ownerID, id)
        case .attribute:
            guard let ownerID = read(resource) else { return false }
            return SmallName.equal(ownerID, id)
        }
    }

    func read(_ resource: Resource) -> String? {
        switch self {
        case .ownerId: return resource.ownerId
        case .attribute(let name):
            if case .string(let s)? = resource.attributes.value(forSmall: name) { return s }
            return nil
        }
    }
}

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
        name: String, resourceType: String, location: SourceLocation, signIn: SourceLocation?, auth: AuthPlan?,
        appRoles: AppRolePlan?, membership: MembershipPlan?, feature: FeaturePlan?, limit: LimitPlan?,
        consent: ConsentPlan?, denyRules: [Int], allowRules: [Int], messages: [Reason: MessageTemplate]
    ) {
        self.name = name
        self.resourceType = resourceType
        self.location = location
        self.signIn = signIn
        self.auth = auth
        self.appRoles = appRoles
        self.membership = membership
        self.feature = feature
        self.limit = limit
        self.consent = consent
        self.denyRules = denyRules
        self.allowRules = allowRules
        self.messages = messages
    }
}

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

package struct RulePlan: Sendable {
    package let name: String
    package let effect: Effect
    package let location: SourceLocation
    /// nil: every resource type.
    package let resourceTypes: Set<String>?
    /// nil: every action of those types.
    package let actions: Set<String>?
    /// nil: always.
    package let condition: CompiledCondition?
    package let message: MessageTemplate?

    package init(
        name: String, effect: Effect, location: SourceLocation, resourceTypes: Set<String>?, actions: Set<String>?,
        condition: CompiledCondition?, message: MessageTemplate?
    ) {
        self.name = name
        self.effect = effect
        self.location = location
        self.resourceTypes = resourceTypes
        self.actions = actions
        self.condition = condition
        self.message = message
    }

    package func applies(toType type: String, action: String) -> Bool {
        (resourceTypes?.contains(type) ?? true) && (actions?.contains(action) ?? true)
    }
}
