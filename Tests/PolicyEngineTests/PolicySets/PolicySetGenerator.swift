import Foundation
import PolicyCompiler
import PolicyModel

/// Seeded random policy sets of varied shapes: tiers with features and limits, app roles, attributes,
/// resource types with roles, inheritance and owners, actions with every kind of need, and allow and
/// deny rules whose conditions can be true, false or fail to evaluate. Every set it makes is meant
/// to compile; one that does not is a bug in the generator or the compiler, and the tests say so.
struct PolicySetGenerator {
    var rng: Rng
    /// The set's resource types, chosen before any is built so conditions can name them.
    private var typeNames: [String] = []

    init(rng: Rng) {
        self.rng = rng
    }

    static let tierPool = ["free", "basic", "plus", "pro", "academic", "team", "enterprise"]
    static let appRolePool = ["customer", "driver", "partner", "admin", "staff"]
    static let typePool = ["app", "project", "document", "space", "order", "account"]
    static let actionPool = ["view", "edit", "comment", "delete", "invite", "export", "share", "checkout", "browse", "sync", "add_item", "send_report"]
    static let rolePool = ["viewer", "commenter", "editor", "admin", "owner", "partner"]
    static let featurePool = ["ai_suggestions", "cloud_sync", "advanced_export", "collaboration"]
    static let limitPool = ["sources", "projects", "exports"]
    static let maxAges = ["30s", "90s", "5m", "15m", "1h", "1h30m"]

    /// Attributes a set may declare, by scope, with the values the request generator sends for each.
    static let attributePool: [(scope: String, name: String, type: AttributeType)] = [
        ("subject", "analytics", .bool),
        ("subject", "dataSharing", .enumeration(["none", "minimal", "standard"])),
        ("subject", "age", .int),
        ("subject", "score", .double),
        ("subject", "region", .string),
        ("subject", "trustedUntil", .timestamp),
        ("subject", "groups", .list(.string)),
        ("resource", "amount", .double),
        ("resource", "status", .enumeration(["draft", "published"])),
        ("resource", "count", .int),
        ("resource", "tags", .list(.string)),
        ("resource", "createdBy", .string),
        ("context", "kiosk", .bool),
        ("context", "region", .string),
        ("context", "window", .duration),
    ]

    mutating func make() -> PolicySetModel {
        var model = PolicySetModel()

        // Tiers: none at all (the implicit `default`), or a few in a random upgrade order.
        if rng.chance(85) {
            let ids = Array(rng.shuffled(Self.tierPool).prefix(1 + rng.below(4)))
            let defaultIndex = rng.chance(50) ? rng.below(ids.count) : nil
            model.tiers = ids.enumerated().map { index, id in
                PolicySetModel.Tier(
                    id: id, name: rng.chance(60) ? id.capitalized : nil, price: rng.chance(60) ? "$\(index * 5).99/month" : nil,
                    isDefault: index == defaultIndex)
            }
        }
        let tierIDs = model.tiers.map(\.id)

        if !tierIDs.isEmpty {
            for id in rng.shuffled(Self.featurePool).prefix(rng.below(4)) {
                let tiers = rng.subset(tierIDs, atLeast: 1)
                model.features.append(PolicySetModel.Feature(
                    id: id, name: rng.chance(60) ? id.replacingOccurrences(of: "_", with: " ").capitalized : nil,
                    tiers: tiers, upgradeTo: rng.chance(30) ? rng.pick(tiers) : nil))
            }
            for id in rng.shuffled(Self.limitPool).prefix(rng.below(3)) {
                let caps = rng.subset(tierIDs, atLeast: 0).map { PolicySetModel.Cap(tier: $0, cap: rng.pick([0, 1, 2, 3, 5, 10, 50, 100])) }
                model.limits.append(PolicySetModel.Limit(
                    id: id, name: rng.chance(50) ? "\(id) slots" : nil, counter: rng.chance(40) ? "\(id)_used" : nil, caps: caps,
                    upgradeTo: rng.chance(30) ? rng.pick(tierIDs) : nil))
            }
        }

        if rng.chance(60) {
            model.appRoles = rng.shuffled(Self.appRolePool).prefix(1 + rng.below(4)).map { id in
                PolicySetModel.AppRole(id: id, name: rng.chance(50) ? id.capitalized : nil)
            }
        }

        model.attributes = Self.attributePool.filter { _ in rng.chance(45) }.map {
            PolicySetModel.Attribute(scope: $0.scope, name: $0.name, type: $0.type)
        }

        typeNames = Array(rng.shuffled(Self.typePool).prefix(1 + rng.below(4)))
        for id in typeNames { model.resources.append(resourceType(id, model)) }

        for index in 0..<rng.below(7) { model.rules.append(rule(index, model)) }

        if rng.chance(25) { model.messages = messages() }
        return model
    }

    // MARK: Resource types and actions

    private mutating func resourceType(_ id: String, _ model: PolicySetModel) -> PolicySetModel.ResourceType {
        var type = PolicySetModel.ResourceType(id: id)
        let actionNames = Array(rng.shuffled(Self.actionPool).prefix(1 + rng.below(6)))
        switch rng.below(10) {
        case 0..<4: break  // no membership
        case 4..<6: type.owner = rng.chance(70) ? "ownerId" : "attributes.createdBy"
        case 6..<8: type.owner = "ownerId"; type.roles = roles(actionNames)
        default: type.roles = roles(actionNames)
        }
        if !type.roles.isEmpty, rng.chance(50) { type.ownerRole = rng.pick(type.roles).id }
        let hasMembership = type.owner != nil || !type.roles.isEmpty
        if hasMembership, rng.chance(30) { type.memberActions = rng.subset(actionNames, atLeast: 1) }

        for name in actionNames {
            var action = PolicySetModel.Action(id: name)
            if rng.chance(20) { action.signIn = true }
            if rng.chance(25) {
                let methods: [String]? = rng.chance(75) ? rng.subset(AuthMethod.all, atLeast: 0) : nil
                let maxAge = rng.chance(60) ? rng.pick(Self.maxAges) : nil
                action.auth = PolicySetModel.Auth(methods: methods, maxAge: maxAge, maxAgeSeconds: maxAge.map(PolicySetReader.seconds))
            }
            if !model.appRoles.isEmpty, rng.chance(30) { action.appRoles = rng.subset(model.appRoles.map(\.id), atLeast: 1) }
            // signIn: false is only allowed where nothing else needs a signed-in subject.
            if action.signIn == nil, action.auth == nil, action.appRoles == nil, !hasMembership, rng.chance(10) { action.signIn = false }
            if !model.features.isEmpty, rng.chance(35) { action.feature = rng.pick(model.features).id }
            if !model.limits.isEmpty, rng.chance(35) { action.limit = rng.pick(model.limits).id }
            if rng.chance(18) {
                action.consent = PolicySetModel.Consent(
                    name: rng.chance(70) ? "\(name) data" : nil,
                    when: rng.chance(20) ? nil : condition(model, roles: type.roles.map(\.id), depth: 2))
            }
            type.actions.append(action)
        }
        if rng.chance(15) { type.messages = messages() }
        for index in type.actions.indices where rng.chance(15) {
            type.actions[index].messages = messages(for: type.actions[index])
        }
        return type
    }

    /// Roles for a type: each may inherit from roles declared before it (so there is no cycle) and grant some actions.
    private mutating func roles(_ actionNames: [String]) -> [PolicySetModel.Role] {
        var roles: [PolicySetModel.Role] = []
        for id in rng.shuffled(Self.rolePool).prefix(1 + rng.below(4)) {
            let inherits = roles.isEmpty || rng.chance(50) ? [] : rng.subset(roles.map(\.id), atLeast: 1)
            let grants = rng.chance(25) ? [] : rng.subset(actionNames, atLeast: 0)
            roles.append(PolicySetModel.Role(id: id, inherits: inherits, grants: grants))
        }
        return rng.shuffled(roles)
    }

    // MARK: Rules

    private mutating func rule(_ index: Int, _ model: PolicySetModel) -> PolicySetModel.Rule {
        let effect: Effect = rng.chance(50) ? .deny : .allow
        let resources: [String]? = rng.chance(30) ? nil : rng.subset(model.resources.map(\.id), atLeast: 1)
        let inScope = model.resources.filter { resources?.contains($0.id) ?? true }.flatMap { $0.actions.map(\.id) }
        var seen = Set<String>()
        let scopeActions = inScope.filter { seen.insert($0).inserted }
        let actions: [String]? = rng.chance(25) ? nil : rng.subset(scopeActions, atLeast: 1)
        let roles = model.roleNames(inScope: resources)
        var rule = PolicySetModel.Rule(
            name: rng.chance(85) ? "rule-\(index + 1)" : nil, effect: effect, resources: resources, actions: actions,
            when: rng.chance(25) ? nil : condition(model, roles: roles, depth: 2))
        // Most deny rules also need a narrow, never-failing condition, or they would hide every need behind denied_by_rule.
        if effect == .deny, rng.chance(70) {
            var narrow = [
                "has(resource.id) && resource.id == \(quote("proj-9"))", "resource.usage.items >= 3", "subject.tier == \(quote(rng.pick(model.tierIDs)))",
            ]
            if !model.appRoles.isEmpty { narrow.append("\(quote(rng.pick(model.appRoles).id)) in subject.roles") }
            let narrowing = rng.pick(narrow)
            rule.when = rule.when.map { "(\($0)) && \(narrowing)" } ?? narrowing
        }
        if effect == .deny, rng.chance(40) {
            rule.message = rng.pick(["Blocked by {rule}.", "No {action} on {resource} here.", "Not now.", "{rule}: {action} refused"])
        }
        return rule
    }

    // MARK: Conditions

    /// A condition over what the set declares; many atoms fail to evaluate for some requests
    /// (absent attributes, signed-out ids, missing member keys, integer overflow).
    mutating func condition(_ model: PolicySetModel, roles: [String], depth: Int) -> String {
        if depth == 0 || rng.chance(35) { return atom(model, roles: roles) }
        switch rng.below(6) {
        case 0: return "!(\(condition(model, roles: roles, depth: depth - 1)))"
        case 1, 2:
            let joiner = rng.chance(20) ? "\n&& " : " && "
            return "(\(condition(model, roles: roles, depth: depth - 1))\(joiner)\(condition(model, roles: roles, depth: depth - 1)))"
        default:
            let joiner = rng.chance(20) ? "\n|| " : " || "
            return "(\(condition(model, roles: roles, depth: depth - 1))\(joiner)\(condition(model, roles: roles, depth: depth - 1)))"
        }
    }

    private mutating func quote(_ s: String) -> String { rng.chance(50) ? "'\(s)'" : "\"\(s)\"" }

    private mutating func atom(_ model: PolicySetModel, roles: [String]) -> String {
        var atoms: [String] = [
            "subject.signedIn",
            "!subject.signedIn",
            "subject.tier == \(quote(rng.pick(model.tierIDs)))",
            "subject.tier in [\(rng.subset(model.tierIDs, atLeast: 1).map { quote($0) }.joined(separator: ", "))]",
            "subject.id == resource.ownerId",
            "has(subject.id) && subject.id.startsWith(\(quote("u")))",
            "subject.id.endsWith(\(quote("1")))",
            "subject.auth.method in [\(quote("pin")), \(quote("biometric"))]",
            "context.now - subject.auth.verifiedAt < duration(\(quote(rng.pick(Self.maxAges))))",
            "has(subject.auth.verifiedAt)",
            "resource.usage.\(rng.pick(counters(model))) >= \(rng.pick([0, 1, 3, 10, 50]))",
            "resource.usage.\(rng.pick(counters(model))) + 9223372036854775800 > 0",
            "has(resource.usage.\(rng.pick(counters(model))))",
            "resource.type == \(quote(rng.pick(typeNames)))",
            "size(resource.members) > \(rng.below(3))",
            "subject.id in resource.members",
            "has(resource.role)",
            "context.now < timestamp(\(quote("2026-11-22T12:00:00Z")))",
            "has(subject.subscriptionExpiry) && subject.subscriptionExpiry < context.now",
        ]
        if !model.appRoles.isEmpty { atoms.append("\(quote(rng.pick(model.appRoles).id)) in subject.roles") }
        if !roles.isEmpty {
            let role = quote(rng.pick(roles))
            atoms += ["resource.role == \(role)", "resource.members[subject.id] == \(role)"]
        }
        for attribute in model.attributes {
            let path = "\(attribute.scope).attributes.\(attribute.name)"
            switch attribute.type {
            case .bool: atoms += [path, "has(\(path)) && \(path)", "\(path) == false"]
            case .int: atoms += ["\(path) >= 18", "\(path) - 9223372036854775807 < 0"]
            case .double: atoms += ["\(path) < 500.5", "\(path) + 1 > 0"]
            case .string: atoms += ["\(path) == \(quote("eu"))", "\(path).startsWith(\(quote("e")))", "size(\(path)) > 1"]
            case .timestamp: atoms += ["\(path) > context.now"]
            case .duration: atoms += ["\(path) <= duration(\(quote("5m")))"]
            case .enumeration(let values): atoms += ["\(path) == \(quote(rng.pick(values)))", "\(path) != \(quote(values[0]))"]
            case .list: atoms += ["\(quote("a")) in \(path)", "size(\(path)) == 0", "\(path)[0] == \(quote("a"))"]
            }
        }
        return rng.pick(atoms)
    }

    private func counters(_ model: PolicySetModel) -> [String] {
        model.limits.map { $0.counter ?? $0.id } + ["items"]
    }

    // MARK: Messages

    /// Messages for some reasons, with only placeholders every decision using them can fill.
    private mutating func messages() -> [PolicySetModel.Message] {
        var result: [PolicySetModel.Message] = []
        for reason in rng.subset(Reason.allCases, atLeast: 1) where reason != .allowed {
            var parts = ["{action}", "{resource}"]
            switch reason {
            case .requiresUpgrade: parts += ["{feature}", "{tier}"]
            case .limitExceeded: parts += ["{limit}", "{limitName}", "{used}", "{remaining}"]
            case .roleRequired: parts += ["{roles}", "{role}"]
            case .consentRequired: parts += ["{consent}"]
            case .deniedByRule: parts += ["{rule}"]
            default: break
            }
            let chosen = rng.subset(parts, atLeast: 0)
            let text = "\(reason.rawValue) says" + chosen.map { " \($0)" }.joined() + rng.pick(["", ".", " — sorry!", " (see: help)"])
            result.append(PolicySetModel.Message(reason: reason, text: text))
        }
        return result
    }

    /// Action-level messages may use what that action fills.
    private mutating func messages(for action: PolicySetModel.Action) -> [PolicySetModel.Message] {
        var result = messages()
        for index in result.indices where result[index].reason == .stepUpRequired {
            if action.auth?.maxAge != nil, rng.chance(50) { result[index].text += " Within {maxAge}." }
            if action.auth?.methods?.isEmpty == false, rng.chance(50) { result[index].text += " Use {methods}." }
        }
        return result
    }
}

extension Rng {
    mutating func shuffled<T>(_ items: [T]) -> [T] {
        var items = items
        if items.count > 1 {
            for i in stride(from: items.count - 1, to: 0, by: -1) { items.swapAt(i, below(i + 1)) }
        }
        return items
    }

    /// A random subset of `items` in their original order, with at least `atLeast` of them (when there are enough).
    mutating func subset<T>(_ items: [T], atLeast: Int) -> [T] {
        var chosen = items.filter { _ in chance(50) }
        if chosen.count < atLeast {
            chosen = Array(shuffled(Array(items.indices)).prefix(atLeast)).sorted().map { items[$0] }
        }
        return chosen
    }
}
