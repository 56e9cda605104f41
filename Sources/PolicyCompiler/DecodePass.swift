import PolicyModel
import PolicySyntax

/// Pass 1: reads each file's syntax tree into declarations, reporting unknown keys and wrong types.
struct DecodePass {
    // Which keys each mapping may hold comes from `PolicyKeys`, the table the JSON Schema is written from.

    var reader = NodeReader()
    var declarations = PolicyDeclarations()

    mutating func decode(file root: SyntaxNode) {
        guard let sections = reader.mapping(root, "a policy file") else { return }
        reader.rejectUnknownKeys(sections, allowed: PolicyKeys.file.keys, in: "a policy file")
        for entry in sections {
            let value = entry.value
            switch entry.key.text {
            case "tiers": decodeTiers(value)
            case "features": decodeFeatures(value)
            case "limits": decodeLimits(value)
            case "appRoles": decodeAppRoles(value)
            case "attributes": decodeAttributes(value)
            case "resources": decodeResources(value)
            case "rules": decodeRules(value)
            case "messages": declarations.messages += decodeMessages(value, "messages")
            case "tests": decodeTests(value)
            case "invariants": decodeInvariants(value)
            default: break
            }
        }
    }

    // MARK: Sections

    private mutating func decodeTiers(_ node: SyntaxNode) {
        for (id, body) in namedEntries(node, "tiers") {
            let fields = body.flatMap { reader.mapping($0, "tier '\(id.value)'") } ?? []
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.tier.keys, in: "tier '\(id.value)'")
            declarations.tiers.append(TierDecl(
                id: id,
                name: fields.value("name").flatMap { reader.string($0, "name") }?.value ?? id.value,
                price: fields.value("price").flatMap { reader.string($0, "price") }?.value,
                isDefault: fields.value("default").flatMap { reader.bool($0, "default") },
                products: fields.value("products").flatMap { reader.names($0, "products") } ?? []))
        }
    }

    private mutating func decodeFeatures(_ node: SyntaxNode) {
        for (id, body) in namedEntries(node, "features") {
            let what = "feature '\(id.value)'"
            let fields = body.flatMap { reader.mapping($0, what) } ?? []
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.feature.keys, in: what)
            guard let tiersNode = fields.value("tiers") else {
                reader.diagnostics.error(.missingKey, "\(what) needs 'tiers': the tiers that have it", at: id.location, length: id.length)
                continue
            }
            declarations.features.append(FeatureDecl(
                id: id,
                name: fields.value("name").flatMap { reader.string($0, "name") }?.value ?? id.value,
                tiers: reader.names(tiersNode, "tiers") ?? [],
                upgradeTo: fields.value("upgradeTo").flatMap { reader.name($0, "upgradeTo") }))
        }
    }

    private mutating func decodeLimits(_ node: SyntaxNode) {
        for (id, body) in namedEntries(node, "limits") {
            let what = "limit '\(id.value)'"
            let fields = body.flatMap { reader.mapping($0, what) } ?? []
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.limit.keys, in: what)
            var caps: [(Located<String>, Located<Int>)] = []
            if let tiersNode = fields.value("tiers"), let entries = reader.mapping(tiersNode, "tiers of \(what)") {
                for entry in entries {
                    guard let tier = reader.name(entry.key, "tier"), let cap = reader.integer(entry.value, "the cap of tier '\(tier.value)'") else { continue }
                    if cap.value < 0 {
                        reader.diagnostics.error(.invalidLimit, "a limit cannot be negative", at: cap.location, length: cap.length)
                    }
                    caps.append((tier, cap))
                }
            } else if fields.value("tiers") == nil {
                reader.diagnostics.error(
                    .missingKey, "\(what) needs 'tiers': the cap per tier (tiers left out are unlimited)", at: id.location, length: id.length)
            }
            declarations.limits.append(LimitDecl(
                id: id,
                name: fields.value("name").flatMap { reader.string($0, "name") }?.value ?? id.value,
                counter: fields.value("counter").flatMap { reader.name($0, "counter") }?.value ?? id.value,
                caps: caps.map { (tier: $0.0, cap: $0.1) },
                upgradeTo: fields.value("upgradeTo").flatMap { reader.name($0, "upgradeTo") }))
        }
    }

    private mutating func decodeAppRoles(_ node: SyntaxNode) {
        if case .sequence(let items) = node.kind {
            for item in items {
                if let id = reader.name(item, "app role") { declarations.appRoles.append(AppRoleDecl(id: id, name: id.value)) }
            }
            return
        }
        for (id, body) in namedEntries(node, "appRoles") {
            let fields = body.flatMap { reader.mapping($0, "app role '\(id.value)'") } ?? []
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.appRole.keys, in: "app role '\(id.value)'")
            declarations.appRoles.append(AppRoleDecl(
                id: id, name: fields.value("name").flatMap { reader.string($0, "name") }?.value ?? id.value))
        }
    }

    private mutating func decodeAttributes(_ node: SyntaxNode) {
        guard let scopes = reader.mapping(node, "attributes") else { return }
        reader.rejectUnknownKeys(scopes, allowed: PolicyKeys.attributes.keys, in: "attributes")
        for scopeEntry in scopes {
            guard let scope = scopeEntry.key.text.flatMap(AttributeScope.init(rawValue:)) else { continue }
            for (name, body) in namedEntries(scopeEntry.value, "\(scope.rawValue) attributes") {
                guard let body else {
                    reader.diagnostics.error(.missingType, "attribute '\(name.value)' needs a type", at: name.location, length: name.length)
                    continue
                }
                if let type = attributeType(body, name: name.value) {
                    declarations.attributes.append(AttributeDecl(scope: scope, name: name, type: type))
                }
            }
        }
    }

    private mutating func attributeType(_ node: SyntaxNode, name: String) -> AttributeType? {
        if case .mapping(let fields) = node.kind {
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.enumeration.keys, in: "the type of attribute '\(name)'")
            guard let values = fields.value("enum").flatMap({ reader.names($0, "enum") }), !values.isEmpty else {
                reader.diagnostics.error(.missingType, "attribute '\(name)' needs 'enum: [values]' or a type name", at: node.location)
                return nil
            }
            return .enumeration(values.map(\.value))
        }
        guard let text = reader.string(node, "the type of attribute '\(name)'") else { return nil }
        guard let type = AttributeType.parse(text.value) else {
            reader.diagnostics.error(
                .unknownType, "unknown attribute type '\(text.value)'", at: text.location, length: text.length,
                help: Suggestion.help(for: text.value, kind: "types", known: AttributeType.knownNames))
            return nil
        }
        return type
    }

    private mutating func decodeResources(_ node: SyntaxNode) {
        for (id, body) in namedEntries(node, "resources") {
            let what = "resource type '\(id.value)'"
            let fields = body.flatMap { reader.mapping($0, what) } ?? []
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.resource.keys, in: what)
            var type = ResourceTypeDecl(
                id: id,
                owner: fields.value("owner").flatMap { reader.name($0, "owner") },
                ownerRole: fields.value("ownerRole").flatMap { reader.name($0, "ownerRole") },
                memberActions: fields.value("memberActions").flatMap { reader.names($0, "memberActions") } ?? [],
                roles: [], rolesLocation: fields.keyNode("roles")?.location, actions: [],
                messages: fields.value("messages").map { decodeMessages($0, "messages of \(what)") } ?? [])
            if let rolesNode = fields.value("roles") {
                for (roleID, roleBody) in namedEntries(rolesNode, "roles of \(what)") {
                    let roleWhat = "role '\(roleID.value)'"
                    let roleFields = roleBody.flatMap { reader.mapping($0, roleWhat) } ?? []
                    reader.rejectUnknownKeys(roleFields, allowed: PolicyKeys.role.keys, in: roleWhat)
                    type.roles.append(RoleDecl(
                        id: roleID,
                        inherits: roleFields.value("inherits").flatMap { reader.names($0, "inherits") } ?? [],
                        grants: roleFields.value("grants").flatMap { reader.names($0, "grants") } ?? []))
                }
            }
            if let actionsNode = fields.value("actions") {
                for (actionID, actionBody) in namedEntries(actionsNode, "actions of \(what)") {
                    type.actions.append(decodeAction(actionID, actionBody))
                }
            } else {
                reader.diagnostics.error(.missingKey, "\(what) declares no 'actions'", at: id.location, length: id.length)
            }
            declarations.resourceTypes.append(type)
        }
    }

    private mutating func decodeAction(_ id: Located<String>, _ body: SyntaxNode?) -> ActionDecl {
        let what = "action '\(id.value)'"
        let fields = body.flatMap { reader.mapping($0, what) } ?? []
        reader.rejectUnknownKeys(fields, allowed: PolicyKeys.action.keys, in: what)
        var action = ActionDecl(id: id, messages: fields.value("messages").map { decodeMessages($0, "messages of \(what)") } ?? [])
        _ = fields.value("description").flatMap { reader.string($0, "description") }
        decodeRequirements(fields, of: what, into: &action)
        return action
    }

    private mutating func decodeRules(_ node: SyntaxNode) {
        guard let items = reader.sequence(node, "rules") else { return }
        for item in items {
            guard let fields = reader.mapping(item, "a rule") else { continue }
            reader.rejectUnknownKeys(fields, allowed: PolicyKeys.rule.keys, in: "a rule")
            var effect = Effect.deny
            if let effectNode = fields.value("effect"), let text = reader.string(effectNode, "effect") {
                if let e = Effect(rawValue: text.value) {
                    effect = e
                } else {
                    reader.diagnostics.error(
                        .invalidEffect, "effect must be 'allow' or 'deny', not '\(text.value)'", at: text.location, length: text.length,
                        help: Suggestion.help(for: text.value, kind: "effects", known: ["allow", "deny"]))
                }
            } else {
                reader.diagnostics.error(.missingKey, "a rule needs 'effect: allow' or 'effect: deny'", at: item.location)
            }
            var actions: [Located<String>]?
            if let actionsNode = fields.value("actions") {
                if actionsNode.text != "*" { actions = reader.names(actionsNode, "actions") ?? [] }
            } else {
                reader.diagnostics.error(.missingKey, "a rule needs 'actions' (a list, or \"*\" for all)", at: item.location)
            }
            var resourceTypes: [Located<String>]?
            if let typesNode = fields.value("resources"), typesNode.text != "*" {
                resourceTypes = reader.names(typesNode, "resources") ?? []
            }
            let whenNode = fields.value("when")
            declarations.rules.append(RuleDecl(
                location: item.location,
                name: fields.value("name").flatMap { reader.string($0, "name") }?.value,
                effect: effect, resourceTypes: resourceTypes, actions: actions,
                when: whenNode.flatMap { condition($0, "when") },
                continuationColumn: whenNode?.continuationColumn,
                message: fields.value("message").flatMap { reader.string($0, "message") }))
        }
    }

    private mutating func decodeMessages(_ node: SyntaxNode, _ what: String) -> [MessageDecl] {
        guard let entries = reader.mapping(node, what) else { return [] }
        return entries.compactMap { entry in
            guard let reason = reader.name(entry.key, "reason"), let text = reader.string(entry.value, "message") else { return nil }
            return MessageDecl(reason: reason, text: text)
        }
    }

    /// The items of the list `key` (tests, invariants) that are mappings of `allowed` keys, each with its `name:`, or
    /// `unnamed` and its place in the list (`test 2`); an item of another shape (`what` names one in the error) or an
    /// unknown key is reported, and an item that is not a mapping skipped.
    private mutating func namedItems(
        _ node: SyntaxNode, _ key: String, what: String, unnamed: String, allowed: [String]
    ) -> [(item: SyntaxNode, fields: [SyntaxNode.Entry], name: String)] {
        guard let items = reader.sequence(node, key) else { return [] }
        var named: [(item: SyntaxNode, fields: [SyntaxNode.Entry], name: String)] = []
        for (index, item) in items.enumerated() {
            guard let fields = reader.mapping(item, what) else { continue }
            reader.rejectUnknownKeys(fields, allowed: allowed, in: what)
            named.append((item, fields, fields.value("name").flatMap { reader.string($0, "name") }?.value ?? "\(unnamed) \(index + 1)"))
        }
        return named
    }

    private mutating func decodeTests(_ node: SyntaxNode) {
        for (item, fields, name) in namedItems(node, "tests", what: "a test", unnamed: "test", allowed: PolicyKeys.test.keys) {
            guard let request = fields.value("request") else {
                reader.diagnostics.error(.missingKey, "test '\(name)' needs a 'request'", at: item.location)
                continue
            }
            guard let expectNode = fields.value("expect"), let expectFields = reader.mapping(expectNode, "expect") else {
                if fields.value("expect") == nil {
                    reader.diagnostics.error(.missingKey, "test '\(name)' needs an 'expect'", at: item.location)
                }
                continue
            }
            reader.rejectUnknownKeys(
                expectFields, allowed: PolicyKeys.expect.keys, in: "expect")
            var expect = ExpectDecl(location: expectNode.location)
            if let d = expectFields.value("decision").flatMap({ reader.string($0, "decision") }) {
                if let effect = Effect(rawValue: d.value) {
                    expect.effect = Located(effect, at: d.location, length: d.length)
                } else {
                    reader.diagnostics.error(.invalidEffect, "decision must be 'allow' or 'deny', not '\(d.value)'", at: d.location, length: d.length)
                }
            }
            expect.reason = expectFields.value("reason").flatMap { reader.name($0, "reason") }
            expect.message = expectFields.value("message").flatMap { reader.string($0, "message") }
            expect.upgradeTo = expectFields.value("upgradeTo").flatMap { reader.name($0, "upgradeTo") }
            expect.limit = expectFields.value("limit").flatMap { reader.integer($0, "limit") }
            expect.used = expectFields.value("used").flatMap { reader.integer($0, "used") }
            expect.remaining = expectFields.value("remaining").flatMap { reader.integer($0, "remaining") }
            declarations.tests.append(TestDecl(location: item.location, name: name, request: request, expect: expect))
        }
    }

    private mutating func decodeInvariants(_ node: SyntaxNode) {
        for (item, fields, name) in namedItems(node, "invariants", what: "an invariant", unnamed: "invariant", allowed: PolicyKeys.invariant.keys) {
            var selector = InvariantSelector()
            if let whenNode = fields.value("when"), let entries = reader.mapping(whenNode, "when") {
                reader.rejectUnknownKeys(entries, allowed: PolicyKeys.invariantSelector.keys, in: "the 'when' of invariant '\(name)'")
                func names(_ key: String) -> [Located<String>]? { entries.value(key).flatMap { reader.names($0, key) } }
                selector.resources = names("resource")
                selector.actions = names("action")
                selector.subjects = names("subject")
                selector.tiers = names("tier")
                selector.roles = names("role")
                selector.appRoles = names("appRole")
                selector.withoutAppRoles = names("withoutAppRole")
                selector.authMethods = names("auth")
                selector.features = names("feature")
                selector.limits = names("limit")
            }
            let allowed = InvariantExpectation.allCases.map(\.rawValue)
            guard let expectNode = fields.value("expect") else {
                reader.diagnostics.error(
                    .missingKey, "invariant '\(name)' needs an 'expect': one of \(allowed.joined(separator: ", "))", at: item.location)
                continue
            }
            guard let text = reader.string(expectNode, "expect") else { continue }
            guard let expect = InvariantExpectation(rawValue: text.value) else {
                reader.diagnostics.error(
                    .invalidExpect, "unknown expectation '\(text.value)' in invariant '\(name)'", at: text.location, length: text.length,
                    help: Suggestion.help(for: text.value, kind: "expectations", known: allowed))
                continue
            }
            let reasons = fields.value("reason").flatMap { reader.names($0, "reason") } ?? []
            for reason in reasons where Reason(rawValue: reason.value) == nil {
                reader.diagnostics.error(
                    .unknownReason, "unknown reason '\(reason.value)' in invariant '\(name)'", at: reason.location, length: reason.length,
                    help: Suggestion.help(for: reason.value, kind: "reasons", known: Reason.allCases.map(\.rawValue)))
            }
            if !reasons.isEmpty, expect != .deny, expect != .allow {
                reader.diagnostics.error(
                    .invalidExpect, "'reason' goes with 'expect: deny' or 'expect: allow', not '\(text.value)'", at: reasons[0].location)
            }
            declarations.invariants.append(InvariantDecl(
                location: item.location, name: name, selector: selector, expect: Located(expect, at: text.location, length: text.length),
                reasons: reasons))
        }
    }

    // MARK: Helpers

    /// The entries of a mapping whose keys are declared names; a missing body (`name:`) is nil.
    private mutating func namedEntries(_ node: SyntaxNode, _ what: String) -> [(Located<String>, SyntaxNode?)] {
        guard let entries = reader.mapping(node, what) else { return [] }
        return entries.compactMap { entry in
            guard let id = reader.name(entry.key, "a name in \(what)") else { return nil }
            if case .scalar(let text, false) = entry.value.kind, PlainScalar(text) == .null { return (id, nil) }
            return (id, entry.value)
        }
    }

    mutating func condition(_ node: SyntaxNode, _ what: String) -> Located<String>? {
        guard case .scalar(let text, let quoted) = node.kind else {
            reader.typeError(node, expected: "a condition string", what)
            return nil
        }
        let location = node.textLocation
        if !quoted, case .bool(let b) = PlainScalar(text) { return Located(b ? "true" : "false", at: location) }
        let source = node.unfoldedText ?? text
        return Located(source, at: location, length: source.count)
    }
}

extension SyntaxNode.Kind {
    func mappingValue(_ key: String) -> SyntaxNode? {
        if case .mapping(let entries) = self { return entries.value(key) }
        return nil
    }
}
