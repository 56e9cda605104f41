import Foundation
import PolicyModel

/// A compiled policy's storage, laid out for `decide`.
///
/// Every action of every resource type sits in one flat array of `ActionEntry` objects; a slot is an index
/// into it. `(resource type, action)` resolves to a slot through `ActionTable`, which hashes the two names
/// with a cheap word-at-a-time hash instead of two `Dictionary<String, _>` lookups (SipHash and String
/// normalisation). Deny messages whose facts never change for an action are rendered here, once, so a deny
/// returns a stored string instead of building one.
final class DecisionTable: Sendable {
    /// The set's name and the SHA-256 over its files (`CompiledPolicy.name`, `contentHash`).
    let name: String
    let contentHash: String
    let tiers: [TierPlan]
    let tierIndex: [String: Int]
    let defaultTier: Int
    let productTiers: [String: String]
    let resourceTypes: [String: ResourceTypePlan]
    /// The resource types with member roles (shared spaces), sorted, and as a set: built once here, since a bearer
    /// decision asks for them on every request.
    let sharedResourceTypes: [String]
    let sharedResourceTypeSet: Set<String>
    let rules: [RulePlan]
    let defaultDenyMessage: MessageTemplate
    /// `default_deny`, with its message rendered once.
    let defaultDenyDecision: Decision
    /// Every action of every resource type; `ActionTable` slots index it.
    let entries: [ActionEntry]
    let actionTable: ActionTable
    /// Tier ids in upgrade order, hashed.
    let tierNames: NameTable
    /// Every app role some action requires, and every member role of every resource type: the vocabulary's ids.
    let appRoleNames: NameTable
    let memberRoleNames: NameTable
    /// The app roles the set declares (`appRoles:`), in source order: the only ones a user can be given.
    let declaredAppRoles: [String]
    /// Slots by name, kept only when some policy name is not ASCII (and so cannot use `actionTable`).
    private let slotsByName: [String: [String: Int]]

    init(
        name: String, contentHash: String, tiers: [TierPlan], defaultTier: Int, productTiers: [String: String], resourceTypes: [String: ResourceTypePlan],
        rules: [RulePlan], defaultDenyMessage: MessageTemplate, declaredAppRoles: [String]
    ) {
        self.name = name
        self.contentHash = contentHash
        self.tiers = tiers
        self.declaredAppRoles = declaredAppRoles
        self.sharedResourceTypes = resourceTypes.values.filter { !$0.roleNames.isEmpty }.map(\.name).sorted()
        self.sharedResourceTypeSet = Set(sharedResourceTypes)
        self.tierIndex = Dictionary(uniqueKeysWithValues: tiers.enumerated().map { ($1.id, $0) })
        self.tierNames = NameTable(tiers.map(\.id))
        var appRoles: [String] = []
        var memberRoles: [String] = []
        for typeName in resourceTypes.keys.sorted() {
            let type = resourceTypes[typeName]!
            for role in type.roleNames + (type.ownerRole.map { [$0] } ?? []) where !memberRoles.contains(role) { memberRoles.append(role) }
            for actionName in type.actions.keys.sorted() {
                for role in type.actions[actionName]!.appRoles?.roles ?? [] where !appRoles.contains(role) { appRoles.append(role) }
            }
        }
        let appRoleNames = NameTable(appRoles)
        let memberRoleNames = NameTable(memberRoles)
        self.appRoleNames = appRoleNames
        self.memberRoleNames = memberRoleNames
        self.defaultTier = defaultTier
        self.productTiers = productTiers
        self.resourceTypes = resourceTypes
        self.rules = rules
        self.defaultDenyMessage = defaultDenyMessage
        self.defaultDenyDecision = Decision(
            effect: .deny, reason: .defaultDeny, message: defaultDenyMessage.render(MessageFacts(action: "", resource: ""))).interned

        // Identical rendered texts share one string: most actions show the same few messages.
        var interned: [String: String] = [:]
        func intern(_ text: String) -> String {
            if let existing = interned[text] { return existing }
            interned[text] = text
            return text
        }
        var entries: [ActionEntry] = []
        var keys: [(type: String, action: String)] = []
        for typeName in resourceTypes.keys.sorted() {
            let type = resourceTypes[typeName]!
            for actionName in type.actions.keys.sorted() {
                let plan = type.actions[actionName]!
                let build = MessageBuilder(plan: plan, type: type, tiers: tiers, rules: rules, defaultDenyMessage: defaultDenyMessage)
                entries.append(ActionEntry(
                    plan: plan, type: type, rules: rules, tiers: tiers, messages: build.messages(intern), ruleMessages: build.denyRuleMessages(intern),
                    limitMessages: build.limitMessages(intern), appRoleNames: appRoleNames, memberRoleNames: memberRoleNames))
                keys.append((typeName, actionName))
            }
        }
        self.entries = entries
        self.actionTable = ActionTable(keys)
        var slotsByName: [String: [String: Int]] = [:]
        if !actionTable.isUsable {
            for (slot, key) in keys.enumerated() { slotsByName[key.type, default: [:]][key.action] = slot }
        }
        self.slotsByName = slotsByName
    }

    /// The slot of `action` on `type`, or nil when the policy does not know the pair.
    @inline(__always)
    func slot(type: String, action: String) -> Int? {
        switch actionTable.lookup(type: type, action: action) {
        case .found(let slot): return slot
        case .absent: return nil
        case .notASCII:
            // Names outside ASCII compare by canonical equivalence, as Dictionary keys do: find the plan by
            // dictionary, then its slot by the policy's own spelling of the names.
            guard let plan = resourceTypes[type]?.actions[action] else { return nil }
            if case .found(let slot) = actionTable.lookup(type: plan.resourceType, action: plan.name) { return slot }
            return slotsByName[plan.resourceType]?[plan.name]
        }
    }

    /// The index of tier `name`, or nil when the policy has no such tier.
    @inline(__always)
    func tierSlot(_ name: String) -> Int? {
        // A few compares cost less than a hash when there are few tiers; small ASCII names compare as two words.
        if tierNames.isASCII, let small = SmallName(name) {
            let smalls = tierNames.smallNames
            for i in smalls.indices where smalls[i] == small { return i }
            return nil
        }
        let names = tierNames.names
        if names.count <= 8 {
            for i in names.indices where names[i] == name { return i }
            return nil
        }
        return tierIndex[name]
    }
}
