import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax
import GatehouseReferenceModel

/// The decision procedure of docs/policy-language.md, written plainly over a `PolicySetModel`:
/// look things up by name, walk the checks in the documented order, render messages by replacing
/// text. No index, no interned names, no precomputed grants. Conditions go through the plain
/// `ReferenceEvaluator` over the parsed syntax tree, not the compiled condition nodes.
struct ReferenceDecider {
    let model: PolicySetModel
    /// Parsed condition trees by text, each with the schema its scope checks against.
    private var conditions: [String: Expr] = [:]
    private let schema: ExpressionSchema

    init(_ model: PolicySetModel) {
        self.model = model
        schema = model.schema(resourceRoles: [])
        var texts = model.rules.compactMap(\.when)
        texts += model.resources.flatMap { $0.actions.compactMap { $0.consent?.when } }
        for text in texts {
            guard case .success(let expr) = ExpressionParser.parse(text, origin: SourceLocation(file: "reference", line: 1, column: 1)) else {
                preconditionFailure("the compiler accepted a condition the parser refuses: \(text)")
            }
            conditions[text] = expr
        }
    }

    /// true, false, or nil when the condition cannot be evaluated.
    private func evaluate(_ text: String, _ input: EvaluationInput) -> Bool? {
        ReferenceEvaluator(input: input, schema: schema).evaluate(conditions[text]!)
    }

    func decide(_ request: Request) -> Decision {
        // Deny by default: a type or action the set does not declare.
        guard let type = model.type(request.resource.type), let action = type.action(request.action) else {
            return Decision(effect: .deny, reason: .defaultDeny, message: render(setMessage(.defaultDeny), facts: ["action": "", "resource": ""]))
        }
        let subject = request.subject
        let now = request.context.now ?? Date()
        let signedIn = (subject.id ?? "") != "" && subject.auth?.method != "anonymous"
        let tier = effectiveTier(subject, signedIn: signedIn, now: now)

        // Standing on the resource: the owner field, else the member role.
        var isOwner = false
        var role: String?
        if signedIn, let id = subject.id {
            var ownerValue: String?
            if type.owner == "ownerId" {
                ownerValue = request.resource.ownerId
            } else if let owner = type.owner, owner.hasPrefix("attributes.") {
                if case .string(let s)? = request.resource.attributes[String(owner.dropFirst("attributes.".count))] { ownerValue = s }
            }
            if ownerValue == id {
                isOwner = true
                role = type.ownerRole ?? "owner"
            } else if let memberRole = request.resource.members[id] {
                role = memberRole
                isOwner = memberRole == type.ownerRole
            }
        }
        let input = EvaluationInput(request: request, now: now, effectiveTier: model.tierIDs[tier], signedIn: signedIn, resourceRole: role)
        var facts = ["action": action.id, "resource": type.id]
        let applicable = model.rules.enumerated().filter { $0.element.applies(type: type.id, action: action.id) }

        // 1. Deny rules: the first that matches decides; a condition that cannot be evaluated matches.
        for (index, rule) in applicable where rule.effect == .deny {
            guard rule.when.map({ evaluate($0, input) ?? true }) ?? true else { continue }
            facts["rule"] = rule.name ?? "#\(index + 1)"
            let text = rule.message ?? message(.deniedByRule, action: action, type: type)
            return Decision(effect: .deny, reason: .deniedByRule, message: render(text, facts: facts))
        }

        // 2-8. The needs, in the documented order; the first that fails is the reason.
        var failure: Decision?
        func fail(_ reason: Reason, _ extra: [String: String?] = [:]) {
            for (key, value) in extra { if let value { facts[key] = value } }
            failure = Decision(effect: .deny, reason: reason)
        }
        let hasMembership = type.owner != nil || !type.roles.isEmpty
        let needsSignIn = action.signIn == true || action.auth != nil || action.appRoles != nil || hasMembership
        checks: do {
            if needsSignIn, !signedIn { fail(.unauthenticated); break checks }
            if let auth = action.auth {
                let methods = auth.methods ?? []
                let stepUp: [String: String?] = [
                    "methods": methods.isEmpty ? nil : methods.joined(separator: " or "), "maxAge": auth.maxAgeSeconds.map(Self.format),
                ]
                if !methods.isEmpty, !methods.contains(subject.auth?.method ?? "\u{0}") { fail(.stepUpRequired, stepUp); break checks }
                if let maxAge = auth.maxAgeSeconds {
                    guard let at = subject.auth?.verifiedAt, now.timeIntervalSince(at) <= maxAge else { fail(.stepUpRequired, stepUp); break checks }
                }
            }
            if let needed = action.appRoles, !needed.contains(where: subject.roles.contains) {
                let names = needed.map { id in model.appRoles.first { $0.id == id }?.name ?? id }
                fail(.roleRequired, ["roles": names.joined(separator: " or "), "role": names.first])
                break checks
            }
            if hasMembership, !isOwner {
                guard let role else { fail(.notMember); break checks }
                let granting = type.roles.filter { $0.id != type.ownerRole && grants(role: $0.id, action: action.id, in: type) }.map(\.id)
                let open = type.memberActions.contains(action.id)
                if !open, !granting.contains(role) { fail(granting.isEmpty ? .ownerOnly : .accessDenied); break checks }
            }
            if let featureID = action.feature, let feature = model.feature(featureID), !feature.tiers.contains(model.tierIDs[tier]) {
                let upgradeID = feature.upgradeTo ?? model.tierIDs.first(where: feature.tiers.contains)!
                let upgrade = model.tiers.first { $0.id == upgradeID }
                fail(.requiresUpgrade, ["feature": feature.name ?? feature.id, "tier": upgrade?.name ?? upgradeID, "price": upgrade?.price])
                failure?.upgradeTo = upgradeID
                break checks
            }
            if let limitID = action.limit, let limit = model.limit(limitID), let cap = cap(limit, tier: tier) {
                let used = request.resource.usage[limit.counter ?? limit.id] ?? 0
                if used >= cap {
                    let upgrade = limitUpgrade(limit, from: tier).map { model.tiers[$0] }
                    fail(.limitExceeded, [
                        "limit": String(cap), "limitName": limit.name ?? limit.id, "used": String(used), "remaining": "0",
                        "tier": upgrade.map { $0.name ?? $0.id }, "price": upgrade?.price,
                    ])
                    failure?.limit = cap
                    failure?.used = used
                    failure?.remaining = 0
                    failure?.upgradeTo = upgrade?.id
                    break checks
                }
            }
            if let consent = action.consent, consent.when.map({ evaluate($0, input) }) != true {
                fail(.consentRequired, ["consent": consent.name ?? action.id])
                break checks
            }
        }

        guard var failure else {
            var decision = Decision(effect: .allow, reason: .allowed)
            if let limitID = action.limit, let limit = model.limit(limitID), let cap = cap(limit, tier: tier) {
                let used = request.resource.usage[limit.counter ?? limit.id] ?? 0
                decision.limit = cap
                decision.used = used
                let (remaining, overflow) = cap.subtractingReportingOverflow(used)
                decision.remaining = overflow ? Int.max : max(0, remaining)
            }
            return decision
        }

        // 9. An allow rule rescues a failed need; a condition that cannot be evaluated does not allow.
        for (_, rule) in applicable where rule.effect == .allow {
            if rule.when.map({ evaluate($0, input) == true }) ?? true { return Decision(effect: .allow, reason: .allowed) }
        }
        failure.message = render(message(failure.reason, action: action, type: type), facts: facts)
        return failure
    }

    // MARK: Pieces

    /// The subject's tier index: its own while signed in, known and unexpired; otherwise the default tier.
    private func effectiveTier(_ subject: Subject, signedIn: Bool, now: Date) -> Int {
        let fallback = model.tiers.firstIndex { $0.isDefault } ?? 0
        guard signedIn, let name = subject.tier, let index = model.tierIDs.firstIndex(of: name) else { return fallback }
        if let expiry = subject.subscriptionExpiry, expiry < now { return fallback }
        return index
    }

    /// Whether `role` grants `action`, itself or through the roles it inherits.
    private func grants(role: String, action: String, in type: PolicySetModel.ResourceType, visited: Set<String> = []) -> Bool {
        guard !visited.contains(role), let declared = type.roles.first(where: { $0.id == role }) else { return false }
        if declared.grants.contains(action) { return true }
        return declared.inherits.contains { grants(role: $0, action: action, in: type, visited: visited.union([role])) }
    }

    private func cap(_ limit: PolicySetModel.Limit, tier: Int) -> Int? {
        limit.caps.first { $0.tier == model.tierIDs[tier] }?.cap
    }

    /// The tier that lifts a reached cap: the limit's `upgradeTo` if its cap is higher or absent,
    /// else the next tier in upgrade order whose cap is higher or absent.
    private func limitUpgrade(_ limit: PolicySetModel.Limit, from tier: Int) -> Int? {
        guard let current = cap(limit, tier: tier) else { return nil }
        func lifts(_ other: Int) -> Bool { cap(limit, tier: other).map { $0 > current } ?? true }
        if let named = limit.upgradeTo, let index = model.tierIDs.firstIndex(of: named), index != tier, lifts(index) { return index }
        return model.tierIDs.indices.first { $0 > tier && lifts($0) }
    }

    private func setMessage(_ reason: Reason) -> String {
        model.messages.first { $0.reason == reason }?.text ?? DefaultMessages.text(for: reason)!
    }

    /// The action's message for the reason, else its type's, else the set's, else the built-in one.
    private func message(_ reason: Reason, action: PolicySetModel.Action, type: PolicySetModel.ResourceType) -> String {
        action.messages.first { $0.reason == reason }?.text ?? type.messages.first { $0.reason == reason }?.text ?? setMessage(reason)
    }

    /// Replaces each `{name}` that has a value; leaves the others as written.
    private func render(_ text: String, facts: [String: String]) -> String {
        var out = text
        for (name, value) in facts { out = out.replacingOccurrences(of: "{\(name)}", with: value) }
        return out
    }

    static func format(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) hour\(seconds == 3600 ? "" : "s")" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60)) minute\(seconds == 60 ? "" : "s")" }
        return "\(Int(seconds)) second\(seconds == 1 ? "" : "s")"
    }
}
