import Foundation
import PolicyCompiler
import PolicyModel
import PolicySyntax

/// A policy set as plain data: what the generator makes, the renderer writes as YAML, the reader gets
/// back from YAML, and the reference decider interprets. It shares nothing with the compiler's passes
/// or the engine's plans, so the reference cannot inherit their mistakes.
struct PolicySetModel: Equatable {
    struct Tier: Equatable {
        var id: String
        var name: String?
        var price: String?
        var isDefault = false
    }

    struct Feature: Equatable {
        var id: String
        var name: String?
        var tiers: [String]
        var upgradeTo: String?
    }

    struct Cap: Equatable {
        var tier: String
        var cap: Int
    }

    struct Limit: Equatable {
        var id: String
        var name: String?
        var counter: String?
        var caps: [Cap]
        var upgradeTo: String?
    }

    struct AppRole: Equatable {
        var id: String
        var name: String?
    }

    struct Attribute: Equatable {
        /// `subject`, `resource` or `context`.
        var scope: String
        var name: String
        var type: AttributeType
    }

    struct Role: Equatable {
        var id: String
        var inherits: [String] = []
        var grants: [String] = []
    }

    struct Auth: Equatable {
        var methods: [String]?
        /// The duration as written (`15m`), and in seconds.
        var maxAge: String?
        var maxAgeSeconds: Double?
    }

    struct Consent: Equatable {
        var name: String?
        /// nil: `when: false`, consent can never be given.
        var when: String?
    }

    struct Message: Equatable {
        var reason: Reason
        var text: String
    }

    struct Action: Equatable {
        var id: String
        var signIn: Bool?
        var auth: Auth?
        var appRoles: [String]?
        var feature: String?
        var limit: String?
        var consent: Consent?
        var messages: [Message] = []
    }

    struct ResourceType: Equatable {
        var id: String
        /// `ownerId` or `attributes.NAME`.
        var owner: String?
        var ownerRole: String?
        var memberActions: [String] = []
        var roles: [Role] = []
        var actions: [Action] = []
        var messages: [Message] = []

        func action(_ name: String) -> Action? { actions.first { $0.id == name } }
    }

    struct Rule: Equatable {
        var name: String?
        var effect: Effect
        /// nil: every resource type.
        var resources: [String]?
        /// nil: `"*"`, every action.
        var actions: [String]?
        var when: String?
        var message: String?

        func applies(type: String, action: String) -> Bool {
            (resources?.contains(type) ?? true) && (actions?.contains(action) ?? true)
        }
    }

    var tiers: [Tier] = []
    var features: [Feature] = []
    var limits: [Limit] = []
    var appRoles: [AppRole] = []
    var attributes: [Attribute] = []
    var resources: [ResourceType] = []
    var rules: [Rule] = []
    var messages: [Message] = []

    func type(_ name: String) -> ResourceType? { resources.first { $0.id == name } }
    func feature(_ name: String) -> Feature? { features.first { $0.id == name } }
    func limit(_ name: String) -> Limit? { limits.first { $0.id == name } }

    /// Tier ids in upgrade order; a set with no tiers has the one implicit tier `default`.
    var tierIDs: [String] { tiers.isEmpty ? ["default"] : tiers.map(\.id) }

    /// Resource roles a rule over `scope` (nil: every type) may compare with, as the checker's schema has them.
    func roleNames(inScope scope: [String]?) -> [String] {
        var seen: [String] = []
        for type in resources where scope?.contains(type.id) ?? true {
            for role in type.roles where !seen.contains(role.id) { seen.append(role.id) }
        }
        return seen
    }

    /// The attribute types and names a condition may use, as the compiler's schema would hold them.
    func schema(resourceRoles: [String]) -> ExpressionSchema {
        var schema = ExpressionSchema()
        for attribute in attributes {
            switch attribute.scope {
            case "subject": schema.subjectAttributes[attribute.name] = attribute.type
            case "resource": schema.resourceAttributes[attribute.name] = attribute.type
            default: schema.contextAttributes[attribute.name] = attribute.type
            }
        }
        schema.tiers = tierIDs
        schema.appRoles = appRoles.map(\.id)
        schema.resourceTypes = resources.map(\.id)
        schema.resourceRoles = resourceRoles
        return schema
    }
}

// MARK: Reading a policy set back from YAML

/// Builds a `PolicySetModel` from the located YAML trees of a set's files (in sorted path order),
/// written from docs/policy-language.md and sharing no code with the compiler's decode or resolve passes.
/// It assumes the set is valid (the compiler accepted it): it reads, it does not diagnose.
struct PolicySetReader {
    private(set) var model = PolicySetModel()

    static func read(_ files: [PolicyFileInput]) -> PolicySetModel {
        var reader = PolicySetReader()
        for file in files.sorted(by: { $0.path < $1.path }) {
            let (_, root, problems) = YAMLLoader.load(bytes: file.bytes, path: file.path)
            precondition(problems.isEmpty && root != nil, "\(file.path): \(problems.map(\.message))")
            reader.add(root!)
        }
        return reader.model
    }

    mutating func add(_ root: SyntaxNode) {
        for (key, value) in entries(root) {
            switch key {
            case "tiers":
                for (id, body) in entries(value) {
                    model.tiers.append(PolicySetModel.Tier(
                        id: id, name: string(body, "name"), price: string(body, "price"), isDefault: field(body, "default")?.text == "true"))
                }
            case "features":
                for (id, body) in entries(value) {
                    model.features.append(PolicySetModel.Feature(
                        id: id, name: string(body, "name"), tiers: names(field(body, "tiers")) ?? [], upgradeTo: string(body, "upgradeTo")))
                }
            case "limits":
                for (id, body) in entries(value) {
                    let caps = entries(field(body, "tiers")).map { PolicySetModel.Cap(tier: $0.0, cap: Int($0.1.text ?? "") ?? -1) }
                    model.limits.append(PolicySetModel.Limit(
                        id: id, name: string(body, "name"), counter: string(body, "counter"), caps: caps, upgradeTo: string(body, "upgradeTo")))
                }
            case "appRoles":
                if case .sequence(let items) = value.kind {
                    model.appRoles += items.compactMap(\.text).map { PolicySetModel.AppRole(id: $0) }
                } else {
                    model.appRoles += entries(value).map { PolicySetModel.AppRole(id: $0.0, name: string($0.1, "name")) }
                }
            case "attributes":
                for (scope, declared) in entries(value) {
                    for (name, type) in entries(declared) {
                        model.attributes.append(PolicySetModel.Attribute(scope: scope, name: name, type: attributeType(type)))
                    }
                }
            case "resources":
                for (id, body) in entries(value) { model.resources.append(resourceType(id, body)) }
            case "rules":
                guard case .sequence(let items) = value.kind else { continue }
                for item in items {
                    let actions = field(item, "actions")
                    let resources = field(item, "resources")
                    model.rules.append(PolicySetModel.Rule(
                        name: string(item, "name"), effect: string(item, "effect") == "allow" ? .allow : .deny,
                        resources: resources?.text == "*" ? nil : names(resources),
                        actions: actions?.text == "*" ? nil : names(actions),
                        when: field(item, "when").map(condition), message: string(item, "message")))
                }
            case "messages":
                model.messages += messages(value)
            default:
                continue  // tests and invariants do not decide anything
            }
        }
    }

    private func resourceType(_ id: String, _ body: SyntaxNode?) -> PolicySetModel.ResourceType {
        var type = PolicySetModel.ResourceType(
            id: id, owner: string(body, "owner"), ownerRole: string(body, "ownerRole"),
            memberActions: names(field(body, "memberActions")) ?? [], messages: messages(field(body, "messages")))
        for (roleID, roleBody) in entries(field(body, "roles")) {
            type.roles.append(PolicySetModel.Role(
                id: roleID, inherits: names(field(roleBody, "inherits")) ?? [], grants: names(field(roleBody, "grants")) ?? []))
        }
        for (actionID, actionBody) in entries(field(body, "actions")) {
            var action = PolicySetModel.Action(id: actionID)
            if let signIn = field(actionBody, "signIn")?.text { action.signIn = signIn == "true" }
            if let auth = field(actionBody, "auth") {
                let maxAge = string(auth, "maxAge")
                action.auth = PolicySetModel.Auth(
                    methods: names(field(auth, "methods")), maxAge: maxAge, maxAgeSeconds: maxAge.map(Self.seconds))
            }
            action.appRoles = names(field(actionBody, "appRoles"))
            action.feature = string(actionBody, "feature")
            action.limit = string(actionBody, "limit")
            if let consent = field(actionBody, "consent") {
                let when = field(consent, "when")
                let never = when.map { if case .scalar("false", quoted: false) = $0.kind { true } else { false } } ?? true
                action.consent = PolicySetModel.Consent(name: string(consent, "name"), when: never ? nil : when.map(condition))
            }
            action.messages = messages(field(actionBody, "messages"))
            type.actions.append(action)
        }
        return type
    }

    private func attributeType(_ node: SyntaxNode) -> AttributeType {
        if let values = names(field(node, "enum")) { return .enumeration(values) }
        func parse(_ text: Substring) -> AttributeType {
            let text = text.trimmingCharacters(in: .whitespaces)
            switch text {
            case "bool": return .bool
            case "int": return .int
            case "double": return .double
            case "string": return .string
            case "timestamp": return .timestamp
            case "duration": return .duration
            default: return .list(parse(text.dropFirst("list<".count).dropLast()))
            }
        }
        return parse(Substring(node.text ?? ""))
    }

    /// `5m`, `1h30m`, `90s`: whole numbers with units, which is all policy files in tests use.
    static func seconds(_ text: String) -> Double {
        var total = 0.0, number = ""
        for c in text {
            if c.isNumber { number.append(c); continue }
            let unit: Double = c == "h" ? 3600 : c == "m" ? 60 : 1
            total += (Double(number) ?? 0) * unit
            number = ""
        }
        return total
    }

    private func condition(_ node: SyntaxNode) -> String {
        if case .scalar(let text, quoted: false) = node.kind, text == "true" || text == "false" { return text }
        return node.unfoldedText ?? node.text ?? ""
    }

    private func messages(_ node: SyntaxNode?) -> [PolicySetModel.Message] {
        entries(node).compactMap { key, value in
            Reason(rawValue: key).map { PolicySetModel.Message(reason: $0, text: value.text ?? "") }
        }
    }

    private func entries(_ node: SyntaxNode?) -> [(String, SyntaxNode)] {
        guard let node, case .mapping(let entries) = node.kind else { return [] }
        return entries.map { ($0.key.text ?? "", $0.value) }
    }

    private func field(_ node: SyntaxNode?, _ key: String) -> SyntaxNode? {
        entries(node).first { $0.0 == key }?.1
    }

    private func string(_ node: SyntaxNode?, _ key: String) -> String? { field(node, key)?.text }

    private func names(_ node: SyntaxNode?) -> [String]? {
        guard let node else { return nil }
        switch node.kind {
        case .sequence(let items): return items.compactMap(\.text)
        case .scalar(let text, _): return [text]
        case .mapping: return nil
        }
    }
}

extension PolicySetModel {
    /// The first differences from `other`, section by section, for failure messages.
    func differences(from other: PolicySetModel) -> String {
        func diff<T: Equatable>(_ name: String, _ a: [T], _ b: [T]) -> String? {
            guard a != b else { return nil }
            if a.count != b.count { return "\(name): \(a.count) vs \(b.count) entries" }
            let i = a.indices.first { a[$0] != b[$0] }!
            return "\(name)[\(i)]: \(a[i])\n   vs \(b[i])"
        }
        return [
            diff("tiers", tiers, other.tiers), diff("features", features, other.features), diff("limits", limits, other.limits),
            diff("appRoles", appRoles, other.appRoles), diff("attributes", attributes, other.attributes),
            diff("resources", resources, other.resources), diff("rules", rules, other.rules), diff("messages", messages, other.messages),
        ].compactMap { $0 }.joined(separator: "\n")
    }
}
