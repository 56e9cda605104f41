import Foundation
import PolicyModel

/// What a subject may do with one action over every resource of a type, as a condition on the resource alone:
/// the answer to "which projects may this user edit?" that a store turns into a query (`PlanSQL`).
///
/// `CompiledPolicy.plan(subject:action:resourceType:context:)` builds it with `decide`'s own pieces: the deny
/// and allow rules and the requirement kinds (`Requirement.residual`), each condition's subject and context parts
/// evaluated by the engine's evaluator, what reads the resource left as an expression. Evaluated on a resource
/// (`CompiledPolicy.allows(_:on:subject:context:)`) it gives `decide`'s effect for that resource.
public enum ResourcePlan: Sendable, Hashable {
    /// Every resource of the type: the subject may take the action whatever the resource.
    case always
    /// No resource: the deny `decide` gives whatever the resource (its reason and message).
    case never(reason: Reason, message: String?)
    /// The resources for which the expression holds.
    case conditional(PlanExpression)

    /// The plan in words: `always`, `never (requires_upgrade: ...)`, or `where ...`.
    public var text: String {
        switch self {
        case .always: "always"
        case .never(let reason, let message): "never (\(reason.rawValue)\(message.map { ": \($0)" } ?? ""))"
        case .conditional(let expression): "where \(expression.text)"
        }
    }

    /// The plan as the contract writes it (docs/decision-contract.md, "Plans").
    public var json: JSONText {
        switch self {
        case .always: return .object([.init("plan", .string("always"))])
        case .never(let reason, let message):
            return .object(
                [.init("plan", .string("never")), .init("reason", .string(reason.rawValue))] + (message.map { [.init("message", .string($0))] } ?? []))
        case .conditional(let expression):
            return .object([.init("plan", .string("conditional")), .init("where", expression.json)])
        }
    }
}

/// A condition over one resource's fields, the subject and context already filled in.
public indirect enum PlanExpression: Sendable, Hashable {
    /// The resource's owner field (`ownerId`, or the attribute the type names) is the subject's id.
    case ownerIsSubject(subject: String, field: OwnerFieldName)
    /// The subject is a member of the resource with one of `roles` (nil: any role).
    case memberRole(subject: String, roles: [String]?)
    /// The resource's usage counter (absent: 0) is below `limit`.
    case usageBelow(counter: String, limit: Int)
    /// A rule's or consent's condition on the resource; when it cannot be evaluated (an absent attribute, a type
    /// mismatch) it counts as `onError`, as `decide` counts it.
    case condition(ResidualCondition)
    /// Every part holds (true when empty).
    case and([PlanExpression])
    /// Some part holds (false when empty).
    case or([PlanExpression])
    /// The part does not hold.
    case not(PlanExpression)

    /// The expression in words, e.g. `owner is 'u1' or member 'u1' has role editor or owner`.
    public var text: String {
        switch self {
        case .ownerIsSubject(let subject, let field): "\(field.attribute.map { "attributes.\($0)" } ?? "owner") is '\(subject)'"
        case .memberRole(let subject, let roles):
            roles.map { "member '\(subject)' has role \($0.isEmpty ? "(none)" : $0.joined(separator: " or "))" } ?? "'\(subject)' is a member"
        case .usageBelow(let counter, let limit): "usage.\(counter) < \(limit)"
        case .condition(let condition): "(\(condition.text))"
        case .and(let parts): parts.map { $0.isCompound ? "(\($0.text))" : $0.text }.joined(separator: " and ")
        case .or(let parts): parts.map { $0.isCompound ? "(\($0.text))" : $0.text }.joined(separator: " or ")
        case .not(let part): "not " + (part.isCompound ? "(\(part.text))" : part.text)
        }
    }

    private var isCompound: Bool {
        switch self {
        case .and, .or: true
        default: false
        }
    }

    /// The expression as JSON: `{"and": [...]}`, `{"ownerIs": "u-1"}`, `{"memberRole": {"subject": .., "in": [..]}}` ...
    public var json: JSONText {
        switch self {
        case .ownerIsSubject(let subject, let field):
            return .object([.init("ownerIs", .string(subject))] + (field.attribute.map { [.init("ownerAttribute", .string($0))] } ?? []))
        case .memberRole(let subject, let roles):
            var fields: [JSONText.Field] = [.init("subject", .string(subject))]
            if let roles { fields.append(.init("in", .array(roles.map { .string($0) }))) }
            return .object([.init("memberRole", .object(fields))])
        case .usageBelow(let counter, let limit):
            return .object([.init("usage", .string(counter)), .init("below", .int(limit))])
        case .condition(let condition):
            return .object([.init("condition", .string(condition.text)), .init("onError", .bool(condition.onError))])
        case .and(let parts): return .object([.init("and", .array(parts.map(\.json)))])
        case .or(let parts): return .object([.init("or", .array(parts.map(\.json)))])
        case .not(let part): return .object([.init("not", part.json)])
        }
    }
}

/// Which field of a resource names its owner.
public struct OwnerFieldName: Sendable, Hashable {
    /// nil: `ownerId`; else the attribute.
    public let attribute: String?

    init(_ field: OwnerField) {
        if case .attribute(let name) = field { attribute = name } else { attribute = nil }
    }
}

/// A compiled condition over the resource, with the value it counts as when it cannot be evaluated.
public struct ResidualCondition: Sendable, Hashable {
    package let node: ConditionNode
    /// What the condition counts as when evaluating it fails: true for a deny rule, false otherwise.
    public let onError: Bool
    /// The condition as written in the policy (the subject's and context's parts not yet filled in).
    public let source: String

    /// A short form for people and JSON: the source as written.
    public var text: String { source }
}

// MARK: - Building

extension CompiledPolicy {
    /// The resources of `resourceType` on which `subject` may take `action`, as a condition on the resource.
    ///
    /// Deny rules first, then the requirements or an allow rule, as `decide`: `always` and `never` when the resource
    /// cannot change the answer. `context.now` should be set: without it the clock is read now, and a plan used
    /// later may differ from `decide` then.
    public func plan(subject: Subject, action: String, resourceType: String, context: Context = Context()) -> ResourcePlan {
        let table = self.table
        guard let slot = table.slot(type: resourceType, action: action) else {
            // An unknown pair: decide's default deny, whatever the resource.
            return Self.resourcePlan(.or([]), never: { table.defaultDenyDecision })
        }
        return withUnsafePointer(to: subject) { subjectPointer in
            withUnsafePointer(to: context) { contextPointer in
                let probe = PlanProbe(subject: subjectPointer, context: contextPointer, action: action, resourceType: resourceType)
                return table.withEntry(slot) { entry in
                    // A `never` plan's deny is decided over the probe itself, as `decide` would over a resource that
                    // holds nothing but its type: building that `Request` and destroying it cost ~150 instructions a
                    // plan, more than the plan's whole margin to 5x `decide` (issue 41).
                    Self.resourcePlan(table.simplifiedPlanExpression(probe, entry: entry)) {
                        var tracer = NoTracer()
                        return table.evaluate(probe, entry: entry, slot: slot, useIndex: true, tracer: &tracer)
                    }
                }
            }
        }
    }

    /// `plan` as first written: the whole expression built over a probe request, then simplified, and a `never`
    /// plan's deny from `decide` over that request. Tests check that `plan` gives exactly this (`PlanDifferentialTests`).
    package func referencePlan(subject: Subject, action: String, resourceType: String, context: Context = Context()) -> ResourcePlan {
        let probe = Request(subject: subject, action: action, resource: Resource(type: resourceType), context: context)
        let table = self.table
        let expression: PlanExpression
        if let slot = table.slot(type: resourceType, action: action) {
            expression = table.withEntry(slot) { table.planExpression(probe, entry: $0) }.simplified
        } else {
            expression = .or([])
        }
        return Self.resourcePlan(expression, never: { decide(probe) })
    }

    /// The plan of a simplified expression: `always`, `never` with `decide`'s deny for a resource that holds nothing
    /// but its type (`never` gives that decision), or the expression.
    @inline(__always)
    private static func resourcePlan(_ expression: PlanExpression, never: () -> Decision) -> ResourcePlan {
        switch expression {
        case .and(let parts) where parts.isEmpty:
            return .always
        case .or(let parts) where parts.isEmpty:
            // Nothing the resource holds allows (or the pair is unknown): the deny of a resource with no owner,
            // members, usage or attributes.
            let decision = never()
            return .never(reason: decision.effect == .deny ? decision.reason : .defaultDeny, message: decision.message)
        default:
            return .conditional(expression)
        }
    }

    /// Whether `plan` allows `resource` for `subject`: what `decide` answers for that resource, by the plan alone.
    public func allows(_ plan: ResourcePlan, on resource: Resource, subject: Subject, context: Context = Context()) -> Bool {
        switch plan {
        case .always: return true
        case .never: return false
        case .conditional(let expression):
            let request = Request(subject: subject, action: "", resource: resource, context: context)
            return table.evaluate(expression, request)
        }
    }
}

extension DecisionTable {
    /// `not(any deny rule) and (every requirement or any allow rule)`, over the probe's subject and context.
    func planExpression(_ probe: Request, entry: ActionEntry) -> PlanExpression {
        let signedIn = probe.signedIn
        let now = probe.decisionTime
        let tier = probe.effectiveTier(self, signedIn: signedIn, now: now)
        let subjectID = signedIn ? probe.subject.id : nil
        return probe.withConditionInput(self, entry: entry, now: now, tier: tier, signedIn: signedIn, role: nil) { input in
            func residual(_ node: ConditionNode?, onError: Bool, source: String) -> PlanExpression {
                guard let node else { return .and([]) }
                return Self.residual(node, input: input, onError: onError, source: source)
            }
            let plan = entry.plan
            let denies = plan.denyRules.map { residual(rules[$0].condition?.root, onError: true, source: rules[$0].condition?.source ?? "") }
            let allows = plan.allowRules.map { residual(rules[$0].condition?.root, onError: false, source: rules[$0].condition?.source ?? "") }
            // The kinds the subject alone decides, checked by decide's own evaluator with the resource's kinds
            // made to pass (owner, no usage, conditions true): a failure there is a subject kind's.
            var tracer = NoTracer()
            let subjectFailure = firstFailedRequirement(
                probe, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: true, role: nil, tracer: &tracer,
                evaluate: { _ in .bool(true) })
            var requirements: [PlanExpression] = []
            if let failure = subjectFailure, let kind = Requirement(denyingWith: failure.reason), !kind.readsResource {
                requirements.append(.or([]))
            }
            for kind in Requirement.allCases where kind.readsResource {
                if let part = kind.residual(
                    in: plan, entry: entry, subject: subjectID, tier: tier,
                    condition: { residual($0.root, onError: false, source: $0.source) })
                {
                    requirements.append(part)
                }
            }
            return .and([.not(.or(denies)), .or([.and(requirements)] + allows)])
        }
    }

    /// `planExpression(_:entry:).simplified`, built already simplified: the same expression without the whole tree
    /// built and rebuilt, and without evaluating what a constant part has already decided.
    ///
    /// The simplification's rules, applied as the parts come: a deny rule that holds makes the plan false and one
    /// that cannot hold drops out; a requirement that cannot hold makes the requirements false, one that always holds
    /// drops out; an allow rule that holds makes the allow side true; an `or` of one part is the part, nested `and`s
    /// and `or`s are flattened.
    func simplifiedPlanExpression(_ probe: PlanProbe, entry: ActionEntry) -> PlanExpression {
        let signedIn = probe.signedIn
        let now = probe.decisionTime
        let tier = probe.effectiveTier(self, signedIn: signedIn, now: now)
        // An action without conditions needs no input, so no request is built.
        guard entry.hasConditions else {
            return simplifiedPlanExpression(probe, entry: entry, signedIn: signedIn, now: now, tier: tier, input: nil)
        }
        return probe.withConditionInput(self, entry: entry, now: now, tier: tier, signedIn: signedIn, role: nil) { input in
            simplifiedPlanExpression(probe, entry: entry, signedIn: signedIn, now: now, tier: tier, input: input)
        }
    }

    /// The same, with the conditions' input (nil when the action has no conditions).
    private func simplifiedPlanExpression(
        _ probe: PlanProbe, entry: ActionEntry, signedIn: Bool, now: Date, tier: Int, input: EvaluationInput?
    ) -> PlanExpression {
        // not(any deny rule)
        var denied: [PlanExpression] = []
        for position in entry.denyConditions.indices {
            guard let root = entry.denyConditions[position] else { return .or([]) }
            let part = Self.residual(root, input: input, onError: true, source: entry.denySources[position])
            switch part {
            case .and(let inner) where inner.isEmpty: return .or([])
            case .or(let inner) where inner.isEmpty: continue
            default: denied.append(part)
            }
        }

        // every requirement, each that reads the resource as its residual (`Requirement.residual`)
        var tracer = NoTracer()
        if let failure = firstFailedRequirement(
            probe, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: true, role: nil, tracer: &tracer,
            evaluate: { _ in .bool(true) }), let kind = Requirement(denyingWith: failure.reason), !kind.readsResource
        {
            return Self.allowRulesAlone(entry, input: input, denied: denied)
        }
        var membership: PlanExpression?
        if entry.hasMembership {
            guard signedIn, let subject = probe.subject.pointee.id else { return Self.allowRulesAlone(entry, input: input, denied: denied) }
            let member = PlanExpression.memberRole(subject: subject, roles: entry.planMemberRoles)
            membership = entry.planOwnerField.map { .or([.ownerIsSubject(subject: subject, field: $0), member]) } ?? member
        }
        var limit: PlanExpression?
        if let caps = entry.limitCaps, let cap = caps[tier] { limit = .usageBelow(counter: entry.limitCounter, limit: cap) }
        var consent: PlanExpression?
        if entry.hasConsent {
            guard let root = entry.consentCondition else { return Self.allowRulesAlone(entry, input: input, denied: denied) }
            let part = Self.residual(root, input: input, onError: false, source: entry.consentSource)
            switch part {
            case .and(let inner) where inner.isEmpty: break
            case .or(let inner) where inner.isEmpty: return Self.allowRulesAlone(entry, input: input, denied: denied)
            default: consent = part
            }
        }
        let count = (membership == nil ? 0 : 1) + (limit == nil ? 0 : 1) + (consent == nil ? 0 : 1)
        // Every requirement holds whatever the resource: the allow rules cannot add anything.
        guard count > 0 else { return Self.joined(denied: denied, allowed: .and([])) }
        let requirements: PlanExpression
        if count == 1 {
            requirements = membership ?? limit ?? consent!
        } else {
            var parts: [PlanExpression] = []
            parts.reserveCapacity(count)
            if let membership { parts.append(membership) }
            if let limit { parts.append(limit) }
            if let consent { parts.append(consent) }
            requirements = .and(parts)
        }
        guard !entry.allowConditions.isEmpty else { return Self.joined(denied: denied, allowed: requirements) }
        var allowed: [PlanExpression]
        if case .or(let inner) = requirements { allowed = inner } else { allowed = [requirements] }
        return Self.allowRules(entry, input: input, denied: denied, allowed: &allowed)
    }

    /// The plan when the requirements cannot hold: the deny rules' part and the allow rules alone.
    private static func allowRulesAlone(_ entry: ActionEntry, input: EvaluationInput?, denied: [PlanExpression]) -> PlanExpression {
        var allowed: [PlanExpression] = []
        return allowRules(entry, input: input, denied: denied, allowed: &allowed)
    }

    /// `not(or(denied)) and or(allowed + the allow rules)`, simplified.
    private static func allowRules(
        _ entry: ActionEntry, input: EvaluationInput?, denied: [PlanExpression], allowed: inout [PlanExpression]
    ) -> PlanExpression {
        for position in entry.allowConditions.indices {
            guard let root = entry.allowConditions[position] else { return joined(denied: denied, allowed: .and([])) }
            let part = residual(root, input: input, onError: false, source: entry.allowSources[position])
            switch part {
            case .and(let inner) where inner.isEmpty: return joined(denied: denied, allowed: .and([]))
            case .or(let inner) where inner.isEmpty: continue
            default: allowed.append(part)
            }
        }
        switch allowed.count {
        case 0: return .or([])
        case 1: return joined(denied: denied, allowed: allowed[0])
        default: return joined(denied: denied, allowed: .or(allowed))
        }
    }

    /// `not(or(denied)) and allowed`, simplified (`allowed` already is, and is not false).
    private static func joined(denied: [PlanExpression], allowed: PlanExpression) -> PlanExpression {
        let deny: PlanExpression
        switch denied.count {
        case 0: return allowed
        case 1: deny = .not(denied[0])
        default: deny = .not(.or(denied))
        }
        switch allowed {
        case .and(let inner): return inner.isEmpty ? deny : .and([deny] + inner)
        default: return .and([deny, allowed])
        }
    }

    /// `residual` where the input is present whenever the action has a condition (`ActionEntry.hasConditions`).
    private static func residual(_ node: ConditionNode, input: EvaluationInput?, onError: Bool, source: String) -> PlanExpression {
        guard let input else { preconditionFailure("a condition evaluated without its input") }
        return residual(node, input: input, onError: onError, source: source)
    }

    /// The condition with every part that reads no resource field evaluated now; nil parts (errors) kept.
    static func residual(_ node: ConditionNode, input: borrowing EvaluationInput, onError: Bool, source: String) -> PlanExpression {
        if !node.readsResource {
            switch node.evaluate(input) {
            case .bool(let b)?: return b ? .and([]) : .or([])
            default: return onError ? .and([]) : .or([])
            }
        }
        switch node {
        case .and(let a, let b) where !a.readsResource || !b.readsResource,
            .or(let a, let b) where !a.readsResource || !b.readsResource:
            // CEL: the absorbing value (false for `&&`, true for `||`) on either side wins; otherwise the resource
            // side decides (an error there is an error).
            let absorbing: Bool
            if case .and = node { absorbing = false } else { absorbing = true }
            let fixed = a.readsResource ? b : a
            let other = a.readsResource ? a : b
            switch fixed.evaluate(input) {
            case .bool(let value)? where value == absorbing: return absorbing ? .and([]) : .or([])
            case .bool?: return residual(other, input: input, onError: onError, source: source)
            default: break
            }
        default:
            break
        }
        return .condition(ResidualCondition(node: node.filled(input), onError: onError, source: source))
    }

    /// The plan's value on the resource of `request` (its subject and context the plan's).
    func evaluate(_ expression: PlanExpression, _ request: Request) -> Bool {
        switch expression {
        case .ownerIsSubject(let subject, let field):
            let owner: OwnerField = field.attribute.map { .attribute($0) } ?? .ownerId
            return owner.isOwner(subject, of: request.resource)
        case .memberRole(let subject, let roles):
            guard let role = request.resource.members[subject] else { return false }
            return roles.map { $0.contains(role) } ?? true
        case .usageBelow(let counter, let limit):
            return (request.resource.usage[counter] ?? 0) < limit
        case .condition(let condition):
            let signedIn = request.signedIn
            let now = request.decisionTime
            let tier = request.effectiveTier(self, signedIn: signedIn, now: now)
            let role = standingRole(request, signedIn: signedIn)
            let input = EvaluationInput(request: request, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role)
            guard case .bool(let b)? = condition.node.evaluate(input) else { return condition.onError }
            return b
        case .and(let parts): return parts.allSatisfy { evaluate($0, request) }
        case .or(let parts): return parts.contains { evaluate($0, request) }
        case .not(let part): return !evaluate(part, request)
        }
    }

    /// The role conditions see as `resource.role`, as `decide` derives it for the resource's type.
    private func standingRole(_ request: Request, signedIn: Bool) -> String? {
        guard let type = resourceTypes[request.resource.type], let action = type.actions.values.first,
            let slot = slot(type: type.name, action: action.name)
        else { return nil }
        return standing(request, signedIn: signedIn, entry: entries[slot]).role
    }
}

extension ConditionNode {
    /// Whether evaluating the node may read the resource (its type aside, which a plan fixes).
    package var readsResource: Bool {
        switch self {
        case .constant: false
        case .field(let field): field == .resourceId || field == .resourceOwnerId || field == .resourceRole || field == .resourceMembers
        case .attribute(let owner, _, _): owner == .resource
        case .usage: true
        case .has(let test):
            switch test {
            case .field(let field): field == .resourceId || field == .resourceOwnerId || field == .resourceRole || field == .resourceMembers
            case .attribute(let owner, _): owner == .resource
            case .usage: true
            }
        case .not(let a), .negate(let a), .size(let a): a.readsResource
        case .and(let a, let b), .or(let a, let b), .compare(_, let a, let b), .add(let a, let b), .subtract(let a, let b),
            .contains(let a, let b), .index(let a, let b), .stringTest(_, let a, let b):
            a.readsResource || b.readsResource
        case .inItems(let a, let items): a.readsResource || items.contains { $0.readsResource }
        case .inStrings(let a, _), .inValues(let a, _): a.readsResource
        case .list(let items): items.contains { $0.readsResource }
        }
    }

    /// The node with each part that reads no resource field replaced by its value (when it has one), so what is
    /// left names only the resource.
    func filled(_ input: borrowing EvaluationInput) -> ConditionNode {
        if !readsResource, !isConstant, let value = evaluate(input) { return .constant(value) }
        // Every operand, so that what stays unfilled reads the resource or failed to evaluate (the SQL takes the
        // latter for an error).
        switch self {
        case .not(let a): return .not(a.filled(input))
        case .negate(let a): return .negate(a.filled(input))
        case .size(let a): return .size(a.filled(input))
        case .and(let a, let b): return .and(a.filled(input), b.filled(input))
        case .or(let a, let b): return .or(a.filled(input), b.filled(input))
        case .compare(let op, let a, let b): return .compare(op, a.filled(input), b.filled(input))
        case .add(let a, let b): return .add(a.filled(input), b.filled(input))
        case .subtract(let a, let b): return .subtract(a.filled(input), b.filled(input))
        case .contains(let a, let b): return .contains(element: a.filled(input), container: b.filled(input))
        case .index(let a, let b): return .index(a.filled(input), b.filled(input))
        case .stringTest(let test, let a, let b): return .stringTest(test, a.filled(input), b.filled(input))
        case .inItems(let a, let items): return .inItems(a.filled(input), items.map { $0.filled(input) })
        case .inStrings(let a, let set): return .inStrings(a.filled(input), set)
        case .inValues(let a, let values): return .inValues(a.filled(input), values)
        case .list(let items): return .list(items.map { $0.filled(input) })
        default: return self
        }
    }
}

extension PlanExpression {
    /// `parts` simplified and joined by `&&` (`isAnd`) or `||`: the absorbing constant (false for `&&`, true for `||`)
    /// wins, and nested joins of the same kind are flattened.
    private static func joined(_ parts: [PlanExpression], and isAnd: Bool) -> PlanExpression {
        var out: [PlanExpression] = []
        for part in parts.map(\.simplified) {
            switch part {
            case .or(let inner) where isAnd && inner.isEmpty, .and(let inner) where !isAnd && inner.isEmpty: return part
            case .and(let inner) where isAnd, .or(let inner) where !isAnd: out += inner
            default: out.append(part)
            }
        }
        return out.count == 1 ? out[0] : isAnd ? .and(out) : .or(out)
    }

    /// Constants folded (`and([])` is true, `or([])` false), nested ands and ors flattened, double negation removed.
    var simplified: PlanExpression {
        switch self {
        case .and(let parts):
            return Self.joined(parts, and: true)
        case .or(let parts):
            return Self.joined(parts, and: false)
        case .not(let part):
            switch part.simplified {
            case .and(let inner) where inner.isEmpty: return .or([])
            case .or(let inner) where inner.isEmpty: return .and([])
            case .not(let inner): return inner
            case let other: return .not(other)
            }
        default:
            return self
        }
    }
}
