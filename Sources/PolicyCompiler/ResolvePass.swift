import PolicyEngine
import PolicyModel

/// Pass 2: checks that every name is declared once and every reference names something declared.
///
/// Produces the symbol tables the build pass reads; reports duplicates, unknown references with a
/// did-you-mean, role inheritance cycles, and conflicting declarations.
/// The symbol tables resolving produces: the build pass's whole input besides the declarations.
struct ResolvedSymbols {
    var tierIDs: [String] = []
    var defaultTier = 0
    var features: [String: FeatureDecl] = [:]
    var limits: [String: LimitDecl] = [:]
    var appRoles: [String: AppRoleDecl] = [:]
    var setMessages: [Reason: MessageDecl] = [:]
    /// Per resource type, per role: every action the role grants, inheritance applied.
    var roleGrants: [String: [String: Set<String>]] = [:]
}

struct ResolvePass {
    var diagnostics = DiagnosticCollector()
    let declarations: PolicyDeclarations

    /// What the build pass reads; complete once `run()` returns.
    private(set) var symbols = ResolvedSymbols()

    /// Declared names in declaration order (for did-you-mean) with a set beside each (for the check itself),
    /// built once so checking a reference costs a hash lookup, not a scan of every declaration.
    var featureNames = NameList()
    var limitNames = NameList()
    var appRoleNames = NameList()
    private var typeNames = NameList()
    /// Per resource type name, the indexes of its declarations (two when it is declared twice).
    private var typeDeclarations: [String: [Int]] = [:]
    /// Every action of every resource type, in declaration order, once each.
    private var allActionNames = NameList()

    init(_ declarations: PolicyDeclarations) {
        self.declarations = declarations
    }

    mutating func run() {
        resolveTiers()
        symbols.features = unique(declarations.features, \.id, "feature")
        symbols.limits = unique(declarations.limits, \.id, "limit")
        symbols.appRoles = unique(declarations.appRoles, \.id, "app role")
        _ = unique(declarations.resourceTypes, \.id, "resource type")
        _ = unique(declarations.attributes.map { ScopedName(decl: $0) }, \.key, "attribute")
        for feature in declarations.features { resolveFeature(feature) }
        for limit in declarations.limits { resolveLimit(limit) }
        featureNames = NameList(declarations.features.map(\.id.value))
        limitNames = NameList(declarations.limits.map(\.id.value))
        appRoleNames = NameList(declarations.appRoles.map(\.id.value))
        typeNames = NameList(declarations.resourceTypes.map(\.id.value))
        for (index, type) in declarations.resourceTypes.enumerated() { typeDeclarations[type.id.value, default: []].append(index) }
        allActionNames = NameList(declarations.resourceTypes.flatMap { $0.actions.map(\.id.value) }.uniqued())
        for type in declarations.resourceTypes { resolveType(type) }
        for rule in declarations.rules { resolveRule(rule) }
        symbols.setMessages = messages(declarations.messages)
        for test in declarations.tests { checkExpectation(test) }
        // Names a report refers to (a failing test, a broken invariant, the rule that decided): two with one name
        // would make a report ambiguous, so each is declared once, as docs/policy-language.md says.
        uniqueNames(declarations.rules.compactMap { rule in rule.name.map { ($0, rule.location) } }, "rule")
        uniqueNames(declarations.tests.map { ($0.name, $0.location) }, "test")
        uniqueNames(declarations.invariants.map { ($0.name, $0.location) }, "invariant")
    }

    /// Reports the second of two rules, tests or invariants with one name, with a note at the first.
    private mutating func uniqueNames(_ named: [(String, SourceLocation)], _ kind: String) {
        var first: [String: SourceLocation] = [:]
        for (name, location) in named {
            if let earlier = first[name] {
                diagnostics.error(
                    .duplicateDeclaration, "\(kind) '\(name)' is declared twice", at: location,
                    help: ["give each \(kind) its own name: reports name \(kind)s by it"], notes: [(earlier, "first declared here")])
                continue
            }
            first[name] = location
        }
    }

    // MARK: Tiers

    private mutating func resolveTiers() {
        _ = unique(declarations.tiers, \.id, "tier")
        symbols.tierIDs = declarations.tiers.map(\.id.value).uniqued()
        if symbols.tierIDs.isEmpty { symbols.tierIDs = ["default"] }
        let defaults = declarations.tiers.filter { $0.isDefault?.value == true }
        if defaults.count > 1, let second = defaults.dropFirst().first?.isDefault {
            diagnostics.error(
                .duplicateDefaultTier, "more than one tier is marked default", at: second.location, length: second.length,
                notes: [(defaults[0].isDefault?.location, "'\(defaults[0].id.value)' is marked default here")])
        }
        symbols.defaultTier = defaults.first.flatMap { symbols.tierIDs.firstIndex(of: $0.id.value) } ?? 0
        var products: [String: Located<String>] = [:]
        for tier in declarations.tiers {
            for product in tier.products {
                if let first = products[product.value] {
                    diagnostics.error(
                        .duplicateProduct, "product id '\(product.value)' is mapped to more than one tier", at: product.location,
                        length: product.length, notes: [(first.location, "first mapped here")])
                } else {
                    products[product.value] = product
                }
            }
        }
    }

    // MARK: Features and limits

    private mutating func resolveFeature(_ feature: FeatureDecl) {
        for tier in feature.tiers { checkTier(tier) }
        if feature.tiers.isEmpty {
            diagnostics.error(
                .featureWithoutTiers, "feature '\(feature.id.value)' is in no tier, so it can never be used", at: feature.id.location,
                length: feature.id.length)
        }
        if let upgrade = feature.upgradeTo, checkTier(upgrade), !feature.tiers.contains(where: { $0.value == upgrade.value }) {
            diagnostics.error(
                .upgradeLacksFeature, "upgradeTo '\(upgrade.value)' does not have feature '\(feature.id.value)'",
                at: upgrade.location, length: upgrade.length,
                help: ["name one of the feature's tiers: \(feature.tiers.map(\.value).joined(separator: ", "))"])
        }
    }

    private mutating func resolveLimit(_ limit: LimitDecl) {
        var seen: [String: SourceLocation] = [:]
        for (tier, _) in limit.caps {
            checkTier(tier)
            if let first = seen[tier.value] {
                diagnostics.error(
                    .duplicateDeclaration, "tier '\(tier.value)' has two caps in limit '\(limit.id.value)'", at: tier.location,
                    length: tier.length, notes: [(first, "first cap here")])
            }
            seen[tier.value] = tier.location
        }
        if let upgrade = limit.upgradeTo { checkTier(upgrade) }
    }

    // MARK: Resource types

    private mutating func resolveType(_ type: ResourceTypeDecl) {
        let what = "resource type '\(type.id.value)'"
        let actionNames = type.actions.map(\.id.value)
        _ = unique(type.actions, \.id, "action of \(what)")
        let roles = unique(type.roles, \.id, "role of \(what)")
        let roleNames = type.roles.map(\.id.value)

        if let owner = type.owner, owner.value != "ownerId", !owner.value.hasPrefix("attributes.") {
            diagnostics.error(
                .invalidOwner, "owner must be 'ownerId' or 'attributes.NAME', not '\(owner.value)'", at: owner.location,
                length: owner.length)
        }
        if let ownerRole = type.ownerRole { check(ownerRole, in: roleNames, code: .unknownRole, kind: "roles of \(what)") }
        for action in type.memberActions { check(action, in: actionNames, code: .unknownAction, kind: "actions of \(what)") }

        var grants: [String: Set<String>] = [:]
        for role in type.roles {
            for parent in role.inherits { check(parent, in: roleNames, code: .unknownRole, kind: "roles of \(what)") }
            for action in role.grants { check(action, in: actionNames, code: .unknownAction, kind: "actions of \(what)") }
        }
        for role in type.roles {
            var visiting: [String] = []
            grants[role.id.value] = closure(of: role.id.value, roles: roles, visiting: &visiting)
        }
        symbols.roleGrants[type.id.value] = grants

        for action in type.actions { resolveAction(action, in: type) }
        _ = messages(type.messages)
    }

    /// Every action a role grants, its ancestors' included; reports a cycle once.
    private mutating func closure(
        of role: String, roles: [String: RoleDecl], visiting: inout [String]
    ) -> Set<String> {
        guard let decl = roles[role] else { return [] }
        if let cycleStart = visiting.firstIndex(of: role) {
            let cycle = visiting[cycleStart...] + [role]
            if cycleStart == 0 {
                diagnostics.error(
                    .roleCycle, "role inheritance cycle: \(cycle.joined(separator: " -> "))", at: decl.id.location, length: decl.id.length,
                    help: ["a role cannot inherit from itself, directly or through others"])
            }
            return []
        }
        visiting.append(role)
        defer { visiting.removeLast() }
        var actions = Set(decl.grants.map(\.value))
        for parent in decl.inherits { actions.formUnion(closure(of: parent.value, roles: roles, visiting: &visiting)) }
        return actions
    }

    private mutating func resolveAction(_ action: ActionDecl, in type: ResourceTypeDecl) {
        resolveRequirements(action, in: type)
        _ = messages(action.messages)
    }

    // MARK: Rules and messages

    private mutating func resolveRule(_ rule: RuleDecl) {
        for type in rule.resourceTypes ?? [] { check(type, in: typeNames, code: .unknownResourceType, kind: "resource types") }
        if let actions = rule.actions, !actions.isEmpty {
            // The actions of the types in scope, in declaration order: only the declarations named, never a scan of all.
            let inScope: NameList
            if let scope = rule.resourceTypes {
                let indexes = Set(scope.map(\.value)).flatMap { typeDeclarations[$0] ?? [] }.sorted()
                inScope = NameList(indexes.flatMap { declarations.resourceTypes[$0].actions.map(\.id.value) }.uniqued())
            } else {
                inScope = allActionNames
            }
            for action in actions { check(action, in: inScope, code: .unknownAction, kind: "actions") }
        }
        if rule.effect == .allow, let message = rule.message {
            diagnostics.warning(.unusedMessage, "an allow rule's message is never shown", at: message.location, length: message.length)
        }
    }

    /// Reads a block of messages keyed by reason code, reporting unknown reasons and duplicates.
    private mutating func messages(_ decls: [MessageDecl]) -> [Reason: MessageDecl] {
        var result: [Reason: MessageDecl] = [:]
        for decl in decls {
            guard let reason = checkReason(decl.reason) else { continue }
            if let first = result[reason] {
                diagnostics.error(
                    .duplicateDeclaration, "message for '\(reason.rawValue)' is declared twice", at: decl.reason.location,
                    length: decl.reason.length, notes: [(first.reason.location, "first declared here")])
                continue
            }
            result[reason] = decl
        }
        return result
    }

    /// A test's expected reason must exist and agree with its expected decision: `allowed` goes with allow, every
    /// other reason with deny. A test that expects both could never pass, and would say so only when run.
    private mutating func checkExpectation(_ test: TestDecl) {
        guard let reason = checkReason(test.expect.reason), let effect = test.expect.effect, let written = test.expect.reason else { return }
        let agrees = (effect.value == .allow) == (reason == .allowed)
        guard !agrees else { return }
        diagnostics.error(
            .invalidExpect,
            effect.value == .allow
                ? "test '\(test.name)' expects allow with the deny reason '\(reason.rawValue)'"
                : "test '\(test.name)' expects deny with the reason 'allowed'",
            at: written.location, length: written.length,
            help: [effect.value == .allow ? "an allowed decision's reason is 'allowed': drop the reason, or expect deny" : "name the deny reason the test expects, or expect allow"])
    }

    @discardableResult
    private mutating func checkReason(_ name: Located<String>?) -> Reason? {
        guard let name else { return nil }
        if let reason = Reason(rawValue: name.value) { return reason }
        diagnostics.error(
            .unknownReason, "unknown reason '\(name.value)'", at: name.location, length: name.length,
            help: Suggestion.help(for: name.value, kind: "reasons", known: Reason.allCases.map(\.rawValue)))
        return nil
    }

    // MARK: Helpers

    @discardableResult
    private mutating func checkTier(_ name: Located<String>) -> Bool {
        check(name, in: declarations.tiers.map(\.id.value), code: .unknownTier, kind: "tiers")
    }

    @discardableResult
    mutating func check(_ name: Located<String>, in known: NameList, code: DiagnosticCode, kind: String) -> Bool {
        if known.set.contains(name.value) { return true }
        return report(name, in: known.ordered, code: code, kind: kind)
    }

    @discardableResult
    mutating func check(_ name: Located<String>, in known: [String], code: DiagnosticCode, kind: String) -> Bool {
        if known.contains(name.value) { return true }
        return report(name, in: known, code: code, kind: kind)
    }

    private mutating func report(_ name: Located<String>, in known: [String], code: DiagnosticCode, kind: String) -> Bool {
        let noun = code.rawValue.replacingOccurrences(of: "unknown-", with: "").replacingOccurrences(of: "-", with: " ")
        diagnostics.error(
            code, "unknown \(noun) '\(name.value)'", at: name.location, length: name.length,
            help: Suggestion.help(for: name.value, kind: kind, known: known))
        return false
    }

    /// Indexes declarations by name, reporting a second declaration of the same name.
    private mutating func unique<D>(_ decls: [D], _ id: KeyPath<D, Located<String>>, _ kind: String) -> [String: D] {
        var result: [String: D] = [:]
        for decl in decls {
            let name = decl[keyPath: id]
            if let first = result[name.value] {
                diagnostics.error(
                    .duplicateDeclaration, "\(kind) '\(name.value)' is declared twice", at: name.location, length: name.length,
                    notes: [(first[keyPath: id].location, "first declared here")])
                continue
            }
            result[name.value] = decl
        }
        return result
    }
}

/// Names in declaration order, for did-you-mean help, and as a set, for membership.
struct NameList {
    var ordered: [String] = []
    var set: Set<String> = []
    init() {}
    init(_ names: [String]) {
        ordered = names
        set = Set(names)
    }
}

/// An attribute keyed by scope and name, so `subject.x` and `resource.x` do not clash.
private struct ScopedName {
    let key: Located<String>
    init(decl: AttributeDecl) {
        key = Located("\(decl.scope.rawValue).\(decl.name.value)", at: decl.name.location, length: decl.name.length)
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
