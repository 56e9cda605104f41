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
    /// Slots by name, kept only when some policy name is not ASCII (and so cannot use `actionTable`).
    private let slotsByName: [String: [String: Int]]

    init(
        tiers: [TierPlan], defaultTier: Int, productTiers: [String: String], resourceTypes: [String: ResourceTypePlan],
        rules: [RulePlan], defaultDenyMessage: MessageTemplate
    ) {
        self.tiers = tiers
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
            effect: .deny, reason: .defaultDeny, message: defaultDenyMessage.render(MessageFacts(action: "", resource: "")))

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
        self.messages = messages.map { (reason: $0.0, text: $0.1) }
        self.denyRuleMessages = ruleMessages
        self.limitMessages = limitMessages
        self.allowDecision = Decision(effect: .allow, reason: .allowed, policy: plan.location)
        self.denyDecisions = messages.map { reason, message in
            Self.deny(reason, message: message, plan: plan, tiers: tiers)
        }
        self.denyRuleDecisions = zip(plan.denyRules, ruleMessages).map { index, message in
            Decision(effect: .deny, reason: .deniedByRule, message: message, policy: rules[index].location)
        }
        self.allowRuleDecisions = plan.allowRules.map { Decision(effect: .allow, reason: .allowed, policy: rules[$0].location) }
        self.limitDecisions = limitMessages.indices.map { tier in
            guard let message = limitMessages[tier], let limit = plan.limit else { return nil }
            return Decision(
                effect: .deny, reason: .limitExceeded, message: message, upgradeTo: limit.upgrades[tier].map { tiers[$0].id },
                policy: limit.capLocations[tier] ?? limit.location)
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
    }

    /// Whether a member with role id `role` is granted the action by role.
    @inline(__always)
    func grants(roleID role: Int32) -> Bool {
        for granting in grantingRoleIDs where granting == role { return true }
        return false
    }

    /// The deny for a failed requirement with a fixed message (every reason but `limit_exceeded`).
    static func deny(_ reason: Reason, message: String, plan: ActionPlan, tiers: [TierPlan]) -> Decision {
        switch reason {
        case .unauthenticated:
            return Decision(effect: .deny, reason: reason, message: message, policy: plan.signIn)
        case .stepUpRequired:
            return Decision(effect: .deny, reason: reason, message: message, policy: plan.auth?.location)
        case .roleRequired:
            return Decision(effect: .deny, reason: reason, message: message, policy: plan.appRoles?.location)
        case .requiresUpgrade:
            let upgrade = plan.feature.map { tiers[$0.upgradeTo].id }
            return Decision(effect: .deny, reason: reason, message: message, upgradeTo: upgrade, policy: plan.feature?.location)
        case .consentRequired:
            return Decision(effect: .deny, reason: reason, message: message, policy: plan.consent?.location)
        default:  // not_member, access_denied, owner_only
            return Decision(effect: .deny, reason: reason, message: message, policy: plan.membership?.location)
        }
    }

    /// The finished deny for `reason` when its message is fixed.
    @inline(__always)
    func denyDecision(_ reason: Reason) -> Decision? {
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

/// The facts each deny reason of an action offers its message. Only `limit_exceeded` depends on the request
/// (the count used, and through the effective tier the cap and the tier that lifts it).
struct MessageBuilder {
    let plan: ActionPlan
    let type: ResourceTypePlan
    let tiers: [TierPlan]
    let rules: [RulePlan]
    let defaultDenyMessage: MessageTemplate

    /// The facts for `reason`; `tier` and `used` matter only to `limit_exceeded`.
    static func facts(_ reason: Reason, plan: ActionPlan, typeName: String, tiers: [TierPlan], tier: Int, used: Int) -> MessageFacts {
        var facts = MessageFacts(action: plan.name, resource: typeName)
        switch reason {
        case .stepUpRequired:
            facts.methods = plan.auth?.methods ?? []
            facts.maxAge = plan.auth?.maxAge.map(CompiledPolicy.formatDuration)
        case .roleRequired:
            facts.roles = plan.appRoles?.displayNames ?? []
        case .requiresUpgrade:
            if let feature = plan.feature {
                let upgrade = tiers[feature.upgradeTo]
                facts.feature = feature.name
                facts.tier = upgrade.name
                facts.price = upgrade.price
            }
        case .limitExceeded:
            if let limit = plan.limit {
                let upgrade = limit.upgrades[tier].map { tiers[$0] }
                facts.limit = limit.caps[tier]
                facts.limitName = limit.name
                facts.used = used
                facts.remaining = 0
                facts.tier = upgrade?.name
                facts.price = upgrade?.price
            }
        case .consentRequired:
            facts.consent = plan.consent?.name
        default:
            break
        }
        return facts
    }

    /// The template a failed requirement shows.
    static func template(_ reason: Reason, plan: ActionPlan, defaultDenyMessage: MessageTemplate) -> MessageTemplate {
        plan.messages[reason] ?? defaultDenyMessage
    }

    /// The rendered message of every reason the action can be denied with whose facts are fixed.
    func messages(_ intern: (String) -> String) -> [(Reason, String)] {
        var reasons: [Reason] = []
        if plan.signIn != nil { reasons.append(.unauthenticated) }
        if plan.auth != nil { reasons.append(.stepUpRequired) }
        if plan.appRoles != nil { reasons += [.roleRequired] }
        if plan.membership != nil { reasons += [.notMember, .accessDenied, .ownerOnly] }
        if plan.feature != nil { reasons.append(.requiresUpgrade) }
        if plan.consent != nil { reasons.append(.consentRequired) }
        return reasons.map { reason in
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

/// Resolves `(resource type, action)` to a slot: open addressing over a word-at-a-time multiplicative hash
/// of the names' UTF-8 bytes.
///
/// Only ASCII names take this path, where byte equality is String equality; anything else answers
/// `.notASCII` and the caller compares with `==` (canonical equivalence, as `Dictionary` does). The hash is
/// not keyed: the keys are the policy's own names, fixed at compile time, and a request's names only probe,
/// so a request cannot lengthen a probe chain.
struct ActionTable: Sendable {
    enum Lookup {
        case found(Int)
        case absent
        case notASCII
    }

    private let mask: Int
    /// Slot per bucket, -1 for empty.
    private let buckets: [Int32]
    private let hashes: [UInt64]
    private let types: [String]
    private let actions: [String]
    /// Every key is ASCII; otherwise the table is not used.
    private let usable: Bool
    var isUsable: Bool { usable }
    /// The pairs whose two names are small ASCII strings (`SmallName`), by their words: a request whose names are
    /// small too resolves here with no byte loop. Zero words for a pair with a longer name, which a small request
    /// name can never equal.
    private let smallBuckets: [Int32]
    private let smallTypes: [SmallName]
    private let smallActions: [SmallName]

    init(_ keys: [(type: String, action: String)]) {
        var capacity = 16
        while capacity < keys.count * 2 { capacity <<= 1 }
        var buckets = [Int32](repeating: -1, count: capacity)
        var hashes: [UInt64] = []
        hashes.reserveCapacity(keys.count)
        var usable = keys.count < Int(Int32.max)
        for (slot, key) in keys.enumerated() {
            guard let hash = Self.hash(type: key.type, action: key.action) else {
                usable = false
                break
            }
            hashes.append(hash)
            var i = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while buckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            buckets[i] = Int32(slot)
        }
        self.mask = capacity - 1
        self.buckets = buckets
        self.hashes = hashes
        self.types = keys.map(\.type)
        self.actions = keys.map(\.action)
        self.usable = usable
        var smallBuckets = [Int32](repeating: -1, count: capacity)
        var smallTypes: [SmallName] = []
        var smallActions: [SmallName] = []
        for (slot, key) in keys.enumerated() {
            guard usable, let type = SmallName.canonical(key.type), let action = SmallName.canonical(key.action) else {
                smallTypes.append(.none)
                smallActions.append(.none)
                continue
            }
            smallTypes.append(type)
            smallActions.append(action)
            var i = Self.smallHash(type, action) & (capacity - 1)
            while smallBuckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            smallBuckets[i] = Int32(slot)
        }
        self.smallBuckets = smallBuckets
        self.smallTypes = smallTypes
        self.smallActions = smallActions
    }

    @inline(__always)
    private static func smallHash(_ type: SmallName, _ action: SmallName) -> Int {
        Int(truncatingIfNeeded: action.mixed(into: type.mixed(into: 0x9E37_79B9_7F4A_7C15)))
    }

    @inline(__always)
    func lookup(type: String, action: String) -> Lookup {
        if usable, let smallType = SmallName(type), let smallAction = SmallName(action) {
            var i = Self.smallHash(smallType, smallAction) & mask
            while true {
                let slot = Int(smallBuckets[i])
                if slot < 0 { return .absent }
                if smallTypes[slot] == smallType, smallActions[slot] == smallAction { return .found(slot) }
                i = (i + 1) & mask
            }
        }
        guard usable, let hash = Self.hash(type: type, action: action) else { return .notASCII }
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = Int(buckets[i])
            if slot < 0 { return .absent }
            if hashes[slot] == hash, types[slot] == type, actions[slot] == action { return .found(slot) }
            i = (i + 1) & mask
        }
    }

    /// The hash of the pair, or nil when either name is not ASCII.
    @inline(__always)
    static func hash(type: String, action: String) -> UInt64? {
        var hasher = WordHasher()
        guard hasher.absorb(type), hasher.absorb(action) else { return nil }
        return hasher.finishIfASCII()
    }

    /// The slot of the pair given as UTF-8 bytes, for readers that have not built Strings.
    func lookup(type: UnsafeRawBufferPointer, action: UnsafeRawBufferPointer) -> Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        hasher.absorb(type)
        hasher.absorb(action)
        guard let hash = hasher.finishIfASCII() else { return .notASCII }
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = Int(buckets[i])
            if slot < 0 { return .absent }
            if hashes[slot] == hash, WordHasher.equal(types[slot], type), WordHasher.equal(actions[slot], action) { return .found(slot) }
            i = (i + 1) & mask
        }
    }
}

/// Names to their positions, by the same word-at-a-time hash as `ActionTable`: the policy's tiers and roles.
///
/// ASCII names only, as for `ActionTable`: a name with any other byte answers `.notASCII`, and the caller
/// compares with `==` (canonical equivalence).
struct NameTable: Sendable {
    private let mask: Int
    private let buckets: [Int32]
    private let hashes: [UInt64]
    let names: [String]
    private let usable: Bool
    /// Every name is ASCII, and each as a `SmallName` (zero words when longer than 15 bytes).
    var isASCII: Bool { usable }
    let smallNames: [SmallName]

    init(_ names: [String]) {
        var capacity = 8
        while capacity < names.count * 2 { capacity <<= 1 }
        var buckets = [Int32](repeating: -1, count: capacity)
        var hashes: [UInt64] = []
        var usable = names.count < Int(Int32.max)
        for (index, name) in names.enumerated() {
            var hasher = WordHasher()
            guard hasher.absorb(name), let hash = hasher.finishIfASCII() else {
                usable = false
                break
            }
            hashes.append(hash)
            var i = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while buckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            buckets[i] = Int32(index)
        }
        self.mask = capacity - 1
        self.buckets = buckets
        self.hashes = hashes
        self.names = names
        self.usable = usable
        self.smallNames = SmallName.list(names).names
    }

    /// The position of `name`; `.notASCII` when the name or any name of the table is not ASCII.
    @inline(__always)
    func lookup(_ name: String) -> ActionTable.Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        guard hasher.absorb(name), let hash = hasher.finishIfASCII() else { return .notASCII }
        return probe(hash) { names[$0] == name }
    }

    /// The position of the name given as UTF-8 bytes.
    @inline(__always)
    func lookup(utf8 name: UnsafeRawBufferPointer) -> ActionTable.Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        hasher.absorb(name)
        guard let hash = hasher.finishIfASCII() else { return .notASCII }
        return probe(hash) { WordHasher.equal(names[$0], name) }
    }

    /// The position of `name`, comparing by canonical equivalence whatever the bytes.
    func index(of name: String) -> Int? {
        switch lookup(name) {
        case .found(let index): return index
        case .absent: return nil
        case .notASCII: return names.firstIndex(of: name)
        }
    }

    /// The position of the name given as UTF-8 bytes, by canonical equivalence when it is not ASCII.
    func index(utf8 name: UnsafeRawBufferPointer) -> Int? {
        switch lookup(utf8: name) {
        case .found(let index): return index
        case .absent: return nil
        case .notASCII: return index(of: String(decoding: name, as: UTF8.self))
        }
    }

    @inline(__always)
    private func probe(_ hash: UInt64, _ same: (Int) -> Bool) -> ActionTable.Lookup {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let index = Int(buckets[i])
            if index < 0 { return .absent }
            if hashes[index] == hash, same(index) { return .found(index) }
            i = (i + 1) & mask
        }
    }
}

/// A multiplicative hash over UTF-8 a word at a time, noting whether any byte was outside ASCII.
///
/// Not keyed: it hashes only the policy's own names, fixed at compile time; a request's names only probe.
struct WordHasher {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var bits: UInt64 = 0

    /// Absorbs the string's UTF-8; false when the string has no contiguous UTF-8 (bridged), which callers treat as not ASCII.
    @inline(__always)
    mutating func absorb(_ text: String) -> Bool {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { absorb(UnsafeRawBufferPointer($0)) }
        return done != nil
    }

    @inline(__always)
    mutating func absorb(_ buffer: UnsafeRawBufferPointer) {
        let count = buffer.count
        var offset = 0
        if let base = buffer.baseAddress {
            while offset + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                bits |= word
                state = (state ^ word) &* 0x0000_0100_0000_01B3 &+ 0x2545_F491_4F6C_DD1D
                offset += 8
            }
        }
        // The last 0 to 7 bytes in one word, read as 4 + 2 + 1 bytes so nothing past the end is touched (the
        // same bytes always give the same word, whatever the byte order).
        var tail: UInt64 = 0
        let rest = count - offset
        if rest > 0, let base = buffer.baseAddress {
            let bytes = base + offset
            var at = 0
            if rest & 4 != 0 {
                tail = UInt64(bytes.loadUnaligned(as: UInt32.self))
                at = 4
            }
            if rest & 2 != 0 {
                tail |= UInt64(bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self)) << UInt64(at * 8)
                at += 2
            }
            if rest & 1 != 0 { tail |= UInt64(bytes.load(fromByteOffset: at, as: UInt8.self)) << UInt64(at * 8) }
        }
        bits |= tail
        // The length closes each name, so ("ab", "c") and ("a", "bc") differ.
        state = (state ^ tail ^ (UInt64(count) << 56)) &* 0x0000_0100_0000_01B3 &+ 0x2545_F491_4F6C_DD1D
        state ^= state >> 29
    }

    /// The hash, or nil when some absorbed byte was not ASCII.
    @inline(__always)
    func finishIfASCII() -> UInt64? {
        guard bits & 0x8080_8080_8080_8080 == 0 else { return nil }
        var state = self.state
        state ^= state >> 33
        state = state &* 0xFF51_AFD7_ED55_8CCD
        state ^= state >> 33
        return state
    }

    /// Whether `name`'s UTF-8 is exactly `bytes`.
    @inline(__always)
    static func equal(_ name: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let same: Bool? = name.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, utf8.count) == 0)
        }
        return same ?? name.utf8.elementsEqual(bytes)
    }
}
