import PolicyEngine
import PolicyModel

/// Pass 3: type-checks conditions, compiles messages and builds the indexed `CompiledPolicy`.
struct BuildPass {
    var diagnostics = DiagnosticCollector()
    private var reportedPlaceholders: Set<String> = []
    let declarations: PolicyDeclarations
    let symbols: ResolvedSymbols
    /// The schema every condition shares; only `resourceRoles` differs between conditions.
    private let baseSchema: ExpressionSchema
    /// Per resource type name, the indexes of its declarations.
    private let typeDeclarations: [String: [Int]]
    /// The roles of every resource type, once each, for rules that apply to every type.
    private let allResourceRoles: [String]

    init(_ declarations: PolicyDeclarations, symbols: ResolvedSymbols) {
        self.declarations = declarations
        self.symbols = symbols
        var schema = ExpressionSchema()
        for attribute in declarations.attributes {
            switch attribute.scope {
            case .subject: schema.subjectAttributes[attribute.name.value] = attribute.type
            case .resource: schema.resourceAttributes[attribute.name.value] = attribute.type
            case .context: schema.contextAttributes[attribute.name.value] = attribute.type
            }
        }
        schema.tiers = symbols.tierIDs
        schema.appRoles = declarations.appRoles.map(\.id.value)
        schema.resourceTypes = declarations.resourceTypes.map(\.id.value)
        baseSchema = schema
        var typeDeclarations: [String: [Int]] = [:]
        for (index, type) in declarations.resourceTypes.enumerated() { typeDeclarations[type.id.value, default: []].append(index) }
        self.typeDeclarations = typeDeclarations
        allResourceRoles = declarations.resourceTypes.flatMap { $0.roles.map(\.id.value) }.uniqued()
    }

    mutating func run(name: String, contentHash: String) -> CompiledPolicy {
        let tiers: [TierPlan] =
            declarations.tiers.isEmpty
            ? [TierPlan(id: "default", name: "Default", price: nil)]
            : symbols.tierIDs.compactMap { id in
                declarations.tiers.first { $0.id.value == id }.map { TierPlan(id: id, name: $0.name, price: $0.price) }
            }
        var products: [String: String] = [:]
        for tier in declarations.tiers { for p in tier.products { products[p.value] = tier.id.value } }

        let rules = declarations.rules.enumerated().map { index, rule in buildRule(rule, index: index) }
        let ruleIndex = RuleIndex(rules)
        let setMessages = templates(symbols.setMessages.mapValues { $0 })
        var types: [String: ResourceTypePlan] = [:]
        for type in declarations.resourceTypes where types[type.id.value] == nil {
            types[type.id.value] = buildType(type, tiers: tiers, rules: rules, ruleIndex: ruleIndex, setMessages: setMessages)
        }
        let defaultDeny = setMessages[.defaultDeny] ?? DefaultMessages.template(for: .defaultDeny)!
        return CompiledPolicy(
            name: name, contentHash: contentHash, tiers: tiers, defaultTier: symbols.defaultTier, productTiers: products,
            resourceTypes: types, rules: rules, defaultDenyMessage: defaultDeny, declaredAppRoles: declarations.appRoles.map(\.id.value))
    }

    // MARK: Schema for conditions

    private func schema(resourceRoles: [String]) -> ExpressionSchema {
        var schema = baseSchema
        schema.resourceRoles = resourceRoles
        return schema
    }

    mutating func condition(_ text: Located<String>, continuationColumn: Int?, resourceRoles: [String]) -> CompiledCondition? {
        switch ExpressionChecker.compile(
            text.value, origin: text.location, continuationColumn: continuationColumn, schema: schema(resourceRoles: resourceRoles))
        {
        case .success(let compiled): return compiled
        case .failure(let errors):
            diagnostics.append(contentsOf: errors.diagnostics)
            return nil
        }
    }

    // MARK: Rules

    private mutating func buildRule(_ rule: RuleDecl, index: Int) -> RulePlan {
        let scopeTypes = rule.resourceTypes.map { Set($0.map(\.value)) }
        // The roles of the types in scope, in declaration order: found by name, not by scanning every type.
        let roles = scopeTypes.map { scope in
            scope.flatMap { typeDeclarations[$0] ?? [] }.sorted().flatMap { declarations.resourceTypes[$0].roles.map(\.id.value) }.uniqued()
        } ?? allResourceRoles
        let compiled = rule.when.flatMap { condition($0, continuationColumn: rule.continuationColumn, resourceRoles: roles) }
        let message = rule.message.flatMap { template($0, reason: .deniedByRule) }
        return RulePlan(
            name: rule.name ?? "#\(index + 1)", effect: rule.effect, location: rule.location, resourceTypes: scopeTypes,
            actions: rule.actions.map { Set($0.map(\.value)) }, condition: compiled, message: message)
    }

    // MARK: Resource types and actions

    private mutating func buildType(
        _ type: ResourceTypeDecl, tiers: [TierPlan], rules: [RulePlan], ruleIndex: RuleIndex, setMessages: [Reason: MessageTemplate]
    ) -> ResourceTypePlan {
        let typeMessages = templates(Dictionary(type.messages.compactMap { m in Reason(rawValue: m.reason.value).map { ($0, m) } }, uniquingKeysWith: { a, _ in a }))
        let ownerRole = type.ownerRole?.value
        let roleNames = type.roles.map(\.id.value)
        var actions: [String: ActionPlan] = [:]
        for action in type.actions where actions[action.id.value] == nil {
            let name = action.id.value
            let requirements = requirements(of: action, in: type, tiers: tiers)
            let applicable = ruleIndex.rules(type: type.id.value, action: name)

            // The action without its messages, for the requirement kinds to read.
            let draft = ActionPlan(
                name: name, resourceType: type.id.value, location: action.id.location, requirements: requirements,
                denyRules: applicable.filter { rules[$0].effect == .deny },
                allowRules: applicable.filter { rules[$0].effect == .allow }, messages: [:])
            // The reasons this action can give (its deny rules', then its requirements'), each with the message it will show.
            let reasons = (draft.denyRules.isEmpty ? [] : [Reason.deniedByRule]) + Requirement.reasons(in: draft)
            let actionMessages = templates(Dictionary(action.messages.compactMap { m in Reason(rawValue: m.reason.value).map { ($0, m) } }, uniquingKeysWith: { a, _ in a }))
            var messages: [Reason: MessageTemplate] = [:]
            for reason in reasons {
                guard let template = actionMessages[reason] ?? typeMessages[reason] ?? setMessages[reason] ?? DefaultMessages.template(for: reason) else { continue }
                var available = Placeholder.available(for: reason)
                if let kind = Requirement(denyingWith: reason) { available.subtract(kind.unfillable(in: draft, tiers: tiers)) }
                for placeholder in template.placeholders
                where !available.contains(placeholder) && Placeholder.available(for: reason).contains(placeholder)
                    && reportedPlaceholders.insert("\(template.location?.description ?? name)|\(placeholder)").inserted
                {
                    diagnostics.error(
                        .unfillablePlaceholder,
                        "placeholder {\(placeholder.rawValue)} cannot be filled when '\(name)' on '\(type.id.value)' is denied with '\(reason.rawValue)'",
                        at: template.location ?? action.id.location,
                        help: ["placeholders available here: " + available.map { "{\($0.rawValue)}" }.sorted().joined(separator: ", ")])
                }
                messages[reason] = template
            }
            actions[name] = ActionPlan(
                name: name, resourceType: type.id.value, location: action.id.location, requirements: requirements,
                denyRules: draft.denyRules, allowRules: draft.allowRules, messages: messages)
        }
        let owner: OwnerField? = type.owner.map {
            $0.value.hasPrefix("attributes.") ? .attribute(String($0.value.dropFirst("attributes.".count))) : .ownerId
        }
        return ResourceTypePlan(name: type.id.value, actions: actions, owner: owner, ownerRole: ownerRole, roleNames: roleNames)
    }

    // MARK: Messages

    private mutating func templates(_ decls: [Reason: MessageDecl]) -> [Reason: MessageTemplate] {
        decls.compactMapValues { decl in
            template(decl.text, reason: Reason(rawValue: decl.reason.value) ?? .defaultDeny)
        }
    }

    private mutating func template(_ text: Located<String>, reason: Reason) -> MessageTemplate? {
        // Every deny shows its message, so a blank one would leave the user with nothing to read.
        if text.value.allSatisfy(\.isWhitespace) {
            diagnostics.error(
                .emptyMessage, "the '\(reason.rawValue)' message is empty", at: text.location, length: text.length,
                help: ["write the text the user should see, or remove the entry to use the default message"])
            return nil
        }
        switch MessageTemplate.parse(text.value, location: text.location) {
        case .success(let template):
            let generic = Placeholder.available(for: reason)
            for placeholder in template.placeholders where !generic.contains(placeholder) {
                diagnostics.error(
                    .unfillablePlaceholder, "placeholder {\(placeholder.rawValue)} cannot be filled in a '\(reason.rawValue)' message",
                    at: text.location, length: text.length,
                    help: ["placeholders for '\(reason.rawValue)': " + generic.map { "{\($0.rawValue)}" }.sorted().joined(separator: ", ")])
            }
            return template
        case .failure(let error):
            var location = text.location
            location.column += error.offset + 1
            diagnostics.error(
                .unknownPlaceholder, "unknown placeholder {\(error.name)}", at: location, length: error.name.count + 2,
                help: Suggestion.help(for: error.name, kind: "placeholders", known: Placeholder.allCases.map(\.rawValue)))
            return nil
        }
    }
}

/// Which rules apply to each (resource type, action), built in one pass over the rules.
///
/// A rule lands in one of four buckets by whether it names its types and its actions; the rules of a
/// (type, action) are the union of the four lookups, in source order. This replaces testing every rule
/// against every (type, action), which made compiling quadratic once types grow with rules.
struct RuleIndex {
    private var byTypeAndAction: [String: [String: [Int]]] = [:]
    private var byTypeAnyAction: [String: [Int]] = [:]
    private var anyTypeByAction: [String: [Int]] = [:]
    private var anyTypeAnyAction: [Int] = []

    init(_ rules: [RulePlan]) {
        for (index, rule) in rules.enumerated() {
            switch (rule.resourceTypes, rule.actions) {
            case (let types?, let actions?):
                for type in types { for action in actions { byTypeAndAction[type, default: [:]][action, default: []].append(index) } }
            case (let types?, nil):
                for type in types { byTypeAnyAction[type, default: []].append(index) }
            case (nil, let actions?):
                for action in actions { anyTypeByAction[action, default: []].append(index) }
            case (nil, nil):
                anyTypeAnyAction.append(index)
            }
        }
    }

    /// The indexes of the rules that apply to `action` on `type`, ascending (source order).
    func rules(type: String, action: String) -> [Int] {
        let parts = [byTypeAndAction[type]?[action] ?? [], byTypeAnyAction[type] ?? [], anyTypeByAction[action] ?? [], anyTypeAnyAction]
        let nonEmpty = parts.filter { !$0.isEmpty }
        if nonEmpty.count <= 1 { return nonEmpty.first ?? [] }
        return nonEmpty.flatMap { $0 }.sorted()
    }
}
