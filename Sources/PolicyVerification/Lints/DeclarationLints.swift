import PolicyCompiler
import PolicyEngine
import PolicyModel

/// Lints that read declarations alone: things declared and never used.
///
/// Each errs on the side of silence: when a condition reads a name's path without comparing it to a literal
/// (`subject.tier == resource.attributes.tier`), every name of that kind counts as used.
enum DeclarationLints {
    static let all: [LintRule] = [
        unusedFeature, unusedLimit, unusedMessage, unusedAppRole, unusedResourceRole, unusedAttribute, unusedTier,
    ]

    static let unusedFeature = LintRule(code: .unusedFeature) { input in
        unused(input.declarations.features.map(\.id), usedBy: \.feature, in: input) { id in
            warning(
                .unusedFeature, "feature '\(id.value)' is declared but no action needs it", at: id,
                help: "gate an action with `feature: \(id.value)`, or remove the feature")
        }
    }

    static let unusedLimit = LintRule(code: .unusedLimit) { input in
        unused(input.declarations.limits.map(\.id), usedBy: \.limit, in: input) { id in
            warning(
                .unusedLimit, "limit '\(id.value)' is declared but no action consumes it", at: id,
                help: "add `limit: \(id.value)` to the action that uses it up, or remove the limit")
        }
    }

    /// The warnings for declared names (`declared`) that no action names in its `field`.
    private static func unused(
        _ declared: [Located<String>], usedBy field: KeyPath<ActionDecl, Located<String>?>, in input: LintInput,
        _ report: (Located<String>) -> Diagnostic
    ) -> [Diagnostic] {
        let used = Set(input.declarations.resourceTypes.flatMap { $0.actions.compactMap { $0[keyPath: field]?.value } })
        return declared.filter { !used.contains($0.value) }.map(report)
    }

    static let unusedAppRole = LintRule(code: .unusedAppRole) { input in
        var used = Set(input.declarations.resourceTypes.flatMap { $0.actions.flatMap { $0.appRoles?.map(\.value) ?? [] } })
        guard let named = ConditionReads(input.policy).literals(on: [.field(.subjectRoles)]) else { return [] }
        used.formUnion(named)
        return input.declarations.appRoles.filter { !used.contains($0.id.value) }.map { role in
            warning(
                .unusedAppRole, "app role '\(role.id.value)' is declared but no action or condition needs it", at: role.id,
                help: "require it with `appRoles: [\(role.id.value)]` on an action or test `\"\(role.id.value)\" in subject.roles` in a rule, or remove it")
        }
    }

    static let unusedResourceRole = LintRule(code: .unusedResourceRole) { input in
        guard let named = ConditionReads(input.policy).literals(on: [.field(.resourceRole), .field(.resourceMembers)]) else { return [] }
        var diagnostics: [Diagnostic] = []
        for type in input.declarations.resourceTypes where type.memberActions.isEmpty {
            let roles = Dictionary(type.roles.map { ($0.id.value, $0) }, uniquingKeysWith: { a, _ in a })
            for role in type.roles {
                let name = role.id.value
                if name == type.ownerRole?.value || named.contains(name) { continue }
                if !grants(of: name, roles: roles).isEmpty { continue }
                diagnostics.append(warning(
                    .unusedResourceRole, "role '\(name)' of '\(type.id.value)' grants no action, so a member holding it can do nothing",
                    at: role.id,
                    help: "give it `grants:` or `inherits:`, list actions every member may take in `memberActions:`, or remove the role"))
            }
        }
        return diagnostics
    }

    static let unusedAttribute = LintRule(code: .unusedAttribute) { input in
        var read = Set(ConditionReads(input.policy).reads.map(\.path))
        for type in input.declarations.resourceTypes {
            if let owner = type.owner?.value, owner.hasPrefix("attributes.") { read.insert("resource." + owner) }
        }
        return input.declarations.attributes.filter { !read.contains("\($0.scope.rawValue).attributes.\($0.name.value)") }.map { attribute in
            let path = "\(attribute.scope.rawValue).attributes.\(attribute.name.value)"
            return warning(
                .unusedAttribute, "\(attribute.scope.rawValue) attribute '\(attribute.name.value)' is declared but no condition reads it",
                at: attribute.name, help: "read it as `\(path)` in a rule or consent condition, or remove the declaration")
        }
    }

    static let unusedTier = LintRule(code: .unusedTier) { input in
        let d = input.declarations
        // A tier left out of a limit is unlimited there: with limits, leaving a tier unnamed says something.
        guard d.tiers.count > 1, d.limits.isEmpty, let compared = ConditionReads(input.policy).literals(on: [.field(.subjectTier)]) else { return [] }
        var named = compared
        named.insert(input.policy.defaultTierID)
        for feature in d.features {
            named.formUnion(feature.tiers.map(\.value))
            if let upgrade = feature.upgradeTo { named.insert(upgrade.value) }
        }
        for tier in d.tiers where !tier.products.isEmpty { named.insert(tier.id.value) }
        return d.tiers.filter { !named.contains($0.id.value) }.map { tier in
            warning(
                .unusedTier, "tier '\(tier.id.value)' is declared but no feature, product or condition names it, so it grants nothing",
                at: tier.id, help: "list it in a feature's `tiers:` or map a store product to it, or remove it")
        }
    }

    static let unusedMessage = LintRule(code: .unusedMessage) { input in
        let policy = input.policy
        var shown: Set<SourceLocation> = []
        if let location = policy.defaultDenyMessage.location { shown.insert(location) }
        /// Per resource type, per action: the reasons it can be denied with (each resolved to one message).
        var reasonsOf: [String: [String: Set<Reason>]] = [:]
        for typeName in policy.resourceTypeNames {
            guard let type = policy.resourceTypes[typeName] else { continue }
            for (actionName, action) in type.actions {
                reasonsOf[typeName, default: [:]][actionName] = Set(action.messages.keys)
                for (reason, template) in action.messages {
                    // A deny rule with a message of its own shows that one, not the action's `denied_by_rule` text.
                    if reason == .deniedByRule, !action.denyRules.contains(where: { policy.rules[$0].message == nil }) { continue }
                    if let location = template.location { shown.insert(location) }
                }
            }
        }

        var diagnostics: [Diagnostic] = []
        func check(_ decls: [MessageDecl], scope: String, reasons: [Set<Reason>], topLevel: Bool) {
            for decl in decls where !shown.contains(decl.text.location) {
                guard let reason = Reason(rawValue: decl.reason.value) else { continue }
                let why: String
                if reason == .allowed {
                    why = "an allowed decision carries no message"
                } else if reason == .defaultDeny, !topLevel {
                    why = "'default_deny' messages are read only from the set's top-level `messages:`"
                } else if reasons.contains(where: { $0.contains(reason) }) {
                    why = "every action in \(scope) that can give '\(reason.rawValue)' shows a more specific message (its own, its resource type's, or a deny rule's)"
                } else {
                    why = "no action in \(scope) can be denied with '\(reason.rawValue)'"
                }
                diagnostics.append(warning(
                    .unusedMessage, "message for '\(reason.rawValue)' is never shown", at: decl.reason, help: why + "; remove it"))
            }
        }
        let all = reasonsOf.values.flatMap(\.values)
        check(input.declarations.messages, scope: "the set", reasons: Array(all), topLevel: true)
        for type in input.declarations.resourceTypes {
            let actions = reasonsOf[type.id.value] ?? [:]
            check(type.messages, scope: "'\(type.id.value)'", reasons: Array(actions.values), topLevel: false)
            for action in type.actions {
                check(
                    action.messages, scope: "'\(type.id.value).\(action.id.value)'", reasons: actions[action.id.value].map { [$0] } ?? [],
                    topLevel: false)
            }
        }
        return diagnostics
    }

    // MARK: Helpers

    static func warning(_ code: DiagnosticCode, _ message: String, at name: Located<String>, help: String) -> Diagnostic {
        Diagnostic(.warning, code, message, at: name.location, length: name.length, help: [help])
    }

    /// Every action a resource role grants, through inheritance too.
    static func grants(of role: String, roles: [String: RoleDecl]) -> Set<String> {
        var seen: Set<String> = []
        var pending = [role]
        var actions: Set<String> = []
        while let next = pending.popLast() {
            guard seen.insert(next).inserted, let decl = roles[next] else { continue }
            actions.formUnion(decl.grants.map(\.value))
            pending += decl.inherits.map(\.value)
        }
        return actions
    }
}

/// What a policy's compiled conditions (rules and consents) read and which string literals they compare each
/// value with, as `ConditionFacts` (the one place that works out what a condition reads) finds them.
struct ConditionReads {
    private(set) var reads: Set<SpaceSource> = []
    private var literalsBySource: [SpaceSource: Set<String>] = [:]
    /// Values some condition reads without comparing them to any literal: any name could match there.
    private var open: Set<SpaceSource> = []

    init(_ policy: CompiledPolicy) {
        for condition in policy.conditions {
            let facts = ConditionFacts(condition)
            reads.formUnion(facts.reads)
            for source in facts.reads.union(facts.literals.keys) {
                literalsBySource[source, default: []].formUnion(facts.strings(comparedWith: source))
                if !facts.isCompared(source) { open.insert(source) }
            }
        }
    }

    /// The string literals compared with any of `sources`; nil when a condition reads one of them without a literal.
    func literals(on sources: [SpaceSource]) -> Set<String>? {
        if sources.contains(where: open.contains) { return nil }
        return sources.reduce(into: Set<String>()) { $0.formUnion(literalsBySource[$1] ?? []) }
    }
}

/// The compiler's attribute scope, named apart from Foundation's `AttributeScope` for files that import both.
typealias DeclaredAttributeScope = AttributeScope
