import PolicyEngine
import PolicyModel
import PolicySyntax

// The compiler's one home of the requirement kinds (the engine's is PolicyEngine/Requirement.swift): how an action
// writes each kind (its keys, which the JSON Schema is generated from), how it is decoded, which names it must
// resolve, and the plan it compiles to. `DecodePass`, `ResolvePass` and `BuildPass` call the three functions here
// once per action and know no kind.

/// An action as written: its requirements, then its messages.
package struct ActionDecl: Sendable {
    package var id: Located<String>
    package var signIn: Located<Bool>?
    package var auth: AuthDecl?
    package var appRoles: [Located<String>]?
    package var appRolesLocation: SourceLocation?
    package var feature: Located<String>?
    package var limit: Located<String>?
    package var consent: ConsentDecl?
    package var messages: [MessageDecl]
}

/// `auth: {methods, maxAge}` on an action.
package struct AuthDecl: Sendable {
    package var location: SourceLocation
    package var methods: [Located<String>]
    package var maxAge: Located<Double>?
}

/// `consent: {name, when}` on an action.
package struct ConsentDecl: Sendable {
    package var location: SourceLocation
    package var name: String?
    /// The condition under which the subject has consented; `nil` means consent can never be given.
    package var when: Located<String>?
    package var continuationColumn: Int?
}

extension PolicyKeys {
    package static let auth = Table(
        "auth", "An authentication requirement", [("methods", .names), ("maxAge", .duration)])
    package static let consent = Table(
        "consent", "A consent requirement", [("name", .text), ("when", .condition)], required: ["when"])
    /// The keys an action states its requirements with, in the order the schema lists them.
    static let requirementKeys: [(key: String, shape: Shape)] = [
        ("signIn", .bool), ("auth", .object(auth)), ("appRoles", .names), ("feature", .name), ("limit", .name),
        ("consent", .object(consent)),
    ]
}

extension DecodePass {
    /// The longest `maxAge` accepted: a century, far beyond any real freshness need and well inside
    /// what messages can print.
    static let longestMaxAge = 100 * 366 * 86_400.0

    /// Reads the requirement keys of an action's mapping into `action`.
    mutating func decodeRequirements(_ fields: [SyntaxNode.Entry], of what: String, into action: inout ActionDecl) {
        action.signIn = fields.value("signIn").flatMap { reader.bool($0, "signIn") }
        action.appRoles = fields.value("appRoles").flatMap { reader.names($0, "appRoles") }
        action.appRolesLocation = fields.keyNode("appRoles")?.location
        action.feature = fields.value("feature").flatMap { reader.name($0, "feature") }
        action.limit = fields.value("limit").flatMap { reader.name($0, "limit") }
        if let authNode = fields.value("auth"), let authFields = reader.mapping(authNode, "auth of \(what)") {
            reader.rejectUnknownKeys(authFields, allowed: PolicyKeys.auth.keys, in: "auth of \(what)")
            action.auth = AuthDecl(
                location: fields.keyNode("auth")!.location,
                methods: authFields.value("methods").flatMap { reader.names($0, "methods") } ?? [],
                maxAge: authFields.value("maxAge").flatMap { reader.duration($0, "maxAge") }.flatMap { checkedMaxAge($0) })
        }
        if let consentNode = fields.value("consent"), let consentFields = reader.mapping(consentNode, "consent of \(what)") {
            reader.rejectUnknownKeys(consentFields, allowed: PolicyKeys.consent.keys, in: "consent of \(what)")
            var consent = ConsentDecl(
                location: fields.keyNode("consent")!.location,
                name: consentFields.value("name").flatMap { reader.string($0, "name") }?.value)
            if let whenNode = consentFields.value("when") {
                if case .scalar(let text, false) = whenNode.kind, case .bool(false) = PlainScalar(text) {
                    consent.when = nil  // `when: false`: consent can never be given
                } else {
                    consent.when = condition(whenNode, "when")
                    consent.continuationColumn = whenNode.continuationColumn
                }
            } else {
                reader.diagnostics.error(
                    .missingKey, "consent of \(what) needs 'when': a condition, or false for never",
                    at: consent.location)
            }
            action.consent = consent
        }
    }

    /// A `maxAge` that is negative or absurdly long is refused: the first can never be met, and the
    /// second once made the engine trap printing it in a step-up message.
    private mutating func checkedMaxAge(_ maxAge: Located<Double>) -> Located<Double>? {
        guard maxAge.value < 0 || maxAge.value > Self.longestMaxAge else { return maxAge }
        reader.diagnostics.error(
            .invalidDuration, maxAge.value < 0 ? "maxAge must not be negative" : "maxAge is longer than 100 years",
            at: maxAge.location, length: maxAge.length, help: ["a verification's age is a matter of minutes or hours: 5m, 15m, 1h"])
        return nil
    }
}

extension ResolvePass {
    /// Checks the names an action's requirements refer to, and requirements that contradict each other.
    mutating func resolveRequirements(_ action: ActionDecl, in type: ResourceTypeDecl) {
        if let feature = action.feature { check(feature, in: featureNames, code: .unknownFeature, kind: "features") }
        if let limit = action.limit { check(limit, in: limitNames, code: .unknownLimit, kind: "limits") }
        for role in action.appRoles ?? [] {
            check(role, in: appRoleNames, code: .unknownAppRole, kind: "app roles")
        }
        if action.appRoles?.isEmpty == true, let location = action.appRolesLocation {
            diagnostics.error(.emptyAppRoles, "appRoles is empty, so no one could take '\(action.id.value)'", at: location)
        }
        for method in action.auth?.methods ?? [] {
            check(method, in: AuthMethod.all, code: .unknownMethod, kind: "auth methods")
        }
        if let signIn = action.signIn, signIn.value == false {
            let implied = [
                action.auth != nil ? "auth" : nil, action.appRoles != nil ? "appRoles" : nil,
                (!type.roles.isEmpty || type.owner != nil) ? "membership of '\(type.id.value)'" : nil,
            ].compactMap { $0 }
            if !implied.isEmpty {
                diagnostics.error(
                    .conflictingRequirements, "signIn: false conflicts with \(implied.joined(separator: " and ")), which need a signed-in subject",
                    at: signIn.location, length: signIn.length)
            }
        }
    }
}

extension BuildPass {
    /// The plan of every requirement `action` states (membership comes from its resource type's roles and owner).
    mutating func requirements(of action: ActionDecl, in type: ResourceTypeDecl, tiers: [TierPlan]) -> RequirementPlans {
        let name = action.id.value
        var plans = RequirementPlans()
        if !type.roles.isEmpty || type.owner != nil {
            let ownerRole = type.ownerRole?.value
            let grants = symbols.roleGrants[type.id.value] ?? [:]
            let granting = Set(grants.filter { $0.key != ownerRole && $0.value.contains(name) }.keys)
            let open = type.memberActions.contains { $0.value == name }
            plans.membership = MembershipPlan(
                grantingRoles: granting, openToMembers: open, ownerOnly: granting.isEmpty && !open,
                location: type.rolesLocation ?? type.id.location)
        }
        plans.feature = action.feature.flatMap { buildFeature($0, tiers: tiers) }
        plans.limit = action.limit.flatMap { buildLimit($0, tiers: tiers) }
        if let c = action.consent {
            let compiled = c.when.flatMap { condition($0, continuationColumn: c.continuationColumn, resourceRoles: type.roles.map(\.id.value)) }
            if c.when == nil || compiled != nil {
                plans.consent = ConsentPlan(name: c.name ?? name, condition: compiled, location: c.location)
            }
        }
        plans.auth = action.auth.map { AuthPlan(methods: $0.methods.map(\.value), maxAge: $0.maxAge?.value, location: $0.location) }
        plans.appRoles = action.appRoles.map { roles in
            AppRolePlan(
                roles: roles.map(\.value),
                displayNames: roles.map { symbols.appRoles[$0.value]?.name ?? $0.value },
                location: action.appRolesLocation ?? action.id.location)
        }
        // Auth, app roles and membership need a signed-in subject, so they imply sign-in.
        let needsSignIn = action.signIn?.value == true || plans.auth != nil || plans.appRoles != nil || plans.membership != nil
        plans.signIn = needsSignIn ? (action.signIn?.location ?? action.id.location) : nil
        return plans
    }

    private func buildFeature(_ name: Located<String>, tiers: [TierPlan]) -> FeaturePlan? {
        guard let decl = symbols.features[name.value] else { return nil }
        let has = Set(decl.tiers.map(\.value))
        let tierHas = tiers.map { has.contains($0.id) }
        let upgrade = decl.upgradeTo.flatMap { u in tiers.firstIndex { $0.id == u.value } } ?? tierHas.firstIndex(of: true) ?? 0
        return FeaturePlan(id: decl.id.value, name: decl.name, tierHas: tierHas, upgradeTo: upgrade, location: decl.id.location)
    }

    private func buildLimit(_ name: Located<String>, tiers: [TierPlan]) -> LimitPlan? {
        guard let decl = symbols.limits[name.value] else { return nil }
        var caps = [Int?](repeating: nil, count: tiers.count)
        var locations = [SourceLocation?](repeating: nil, count: tiers.count)
        for (tier, cap) in decl.caps {
            if let i = tiers.firstIndex(where: { $0.id == tier.value }) {
                caps[i] = cap.value
                locations[i] = tier.location
            }
        }
        let explicit = decl.upgradeTo.flatMap { u in tiers.firstIndex { $0.id == u.value } }
        let upgrades: [Int?] = caps.indices.map { i in
            guard let cap = caps[i] else { return nil }
            if let explicit, explicit != i, caps[explicit].map({ $0 > cap }) ?? true { return explicit }
            return caps.indices.first { j in j > i && (caps[j].map { $0 > cap } ?? true) }
        }
        return LimitPlan(
            id: decl.id.value, name: decl.name, counter: decl.counter, caps: caps, upgrades: upgrades, capLocations: locations,
            location: decl.id.location)
    }
}
