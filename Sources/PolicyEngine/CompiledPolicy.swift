import Foundation
import PolicyModel

/// An immutable, compiled policy set: answers `decide` with no I/O, no locks and no parsing.
///
/// Built by `PolicyCompiler`; safe to share across threads. Reloading builds a new one.
public struct CompiledPolicy: Sendable {
    /// The set's name (its folder name).
    public var name: String { table.name }
    /// SHA-256 over the set's files, so every decision log can name the exact policy that decided.
    public var contentHash: String { table.contentHash }
    /// Everything lives in one immutable object, so copying a policy (out of a lock, into a task) is one retain. It is
    /// the only stored property: with the name and hash beside it, the optimiser split `decide` into a thunk that
    /// passed the table on and copied the 40-byte decision out of a temporary (~18 instructions a decision, issue 41).
    let table: DecisionTable

    package init(
        name: String, contentHash: String, tiers: [TierPlan], defaultTier: Int, productTiers: [String: String],
        resourceTypes: [String: ResourceTypePlan], rules: [RulePlan], defaultDenyMessage: MessageTemplate, declaredAppRoles: [String] = []
    ) {
        self.table = DecisionTable(
            name: name, contentHash: contentHash, tiers: tiers, defaultTier: defaultTier, productTiers: productTiers, resourceTypes: resourceTypes, rules: rules,
            defaultDenyMessage: defaultDenyMessage, declaredAppRoles: declaredAppRoles)
    }

    package var tiers: [TierPlan] { table.tiers }
    package var tierIndex: [String: Int] { table.tierIndex }
    package var defaultTier: Int { table.defaultTier }
    /// Store product id to tier id.
    public var productTiers: [String: String] { table.productTiers }
    /// The app roles the set declares (`appRoles:`), in source order: the roles an operator can give a user.
    public var declaredAppRoles: [String] { table.declaredAppRoles }
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
