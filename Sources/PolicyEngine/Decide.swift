import Foundation
import PolicyModel

extension CompiledPolicy {
    /// Decides one request. Pure: the same request (with `context.now` set) always gets the same decision.
    public func decide(_ request: Request) -> Decision {
        var tracer = NoTracer()
        return evaluate(request, useIndex: true, tracer: &tracer)
    }

    /// Decides one request and returns the trace of every check and rule considered, with locations.
    public func explain(_ request: Request) -> Explanation {
        var tracer = TraceRecorder()
        let decision = evaluate(request, useIndex: true, tracer: &tracer)
        return Explanation(decision: decision, trace: tracer.steps)
    }

    /// Decides without the (resource type, action) rule index, scanning every rule: tests compare both paths.
    package func decideUnindexed(_ request: Request) -> Decision {
        var tracer = NoTracer()
        return evaluate(request, useIndex: false, tracer: &tracer)
    }

    /// The tier this policy applies to the subject at `now`: its own while signed in, known and active, else the default.
    package func effectiveTier(of subject: Subject, signedIn: Bool, now: Date) -> Int {
        guard signedIn, let name = subject.tier, let index = tierIndex[name] else { return defaultTier }
        if let expiry = subject.subscriptionExpiry, expiry < now { return defaultTier }
        return index
    }

    func evaluate<T: Tracer>(_ request: Request, useIndex: Bool, tracer: inout T) -> Decision {
        guard let type = resourceTypes[request.resource.type] else {
            tracer.record(TraceStep(check: "resource type", outcome: .fail, detail: "unknown resource type '\(request.resource.type)'", location: nil))
            return defaultDeny()
        }
        guard let action = type.actions[request.action] else {
            tracer.record(TraceStep(check: "action", outcome: .fail, detail: "'\(request.action)' is not an action of '\(type.name)'", location: nil))
            return defaultDeny()
        }
        tracer.record(TraceStep(check: "action", outcome: .pass, detail: "\(type.name).\(action.name)", location: action.location))

        let subject = request.subject
        let signedIn = subject.isSignedIn
        let now = request.context.now ?? Date()
        let tier = effectiveTier(of: subject, signedIn: signedIn, now: now)
        tracer.record(TraceStep(
            check: "subject", outcome: .info,
            detail: "\(signedIn ? "signed in" : "signed out"), effective tier '\(tiers[tier].id)'", location: nil))
        let (isOwner, role) = standing(of: subject, signedIn: signedIn, on: request.resource, type: type)
        let input = EvaluationInput(request: request, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role)

        // An explicit deny beats everything else.
        for index in rulesToConsider(type: type.name, action: action, effect: .deny, useIndex: useIndex) {
            let rule = rules[index]
            let matched = rule.condition.map { $0.evaluate(input) ?? true } ?? true  // an error in a deny condition denies
            tracer.record(TraceStep(
                check: "deny rule \(rule.name)", outcome: matched ? .fail : .skip,
                detail: matched ? "matched" : "condition false", location: rule.location))
            if matched {
                var facts = MessageFacts(action: action.name, resource: type.name)
                facts.rule = rule.name
                let template = rule.message ?? action.messages[.deniedByRule] ?? defaultDenyMessage
                return Decision(effect: .deny, reason: .deniedByRule, message: template.render(facts), policy: rule.location)
            }
        }

        let failure = firstFailedRequirement(action, type: type, input: input, tier: tier, isOwner: isOwner, role: role, tracer: &tracer)
        guard var failure else {
            var decision = Decision(effect: .allow, reason: .allowed, policy: action.location)
            if let limit = action.limit, let cap = limit.caps[tier] {
                let used = request.resource.usage[limit.counter] ?? 0
                decision.limit = cap
                decision.used = used
                // `used` comes from the request and may be any integer; Int.min must not trap.
                let (remaining, overflow) = cap.subtractingReportingOverflow(used)
                decision.remaining = overflow ? Int.max : Swift.max(0, remaining)
            }
            return decision
        }

        // An allow rule can grant what the requirements refused.
        for index in rulesToConsider(type: type.name, action: action, effect: .allow, useIndex: useIndex) {
            let rule = rules[index]
            let matched = rule.condition.map { $0.evaluate(input) ?? false } ?? true  // an error in an allow condition does not allow
            tracer.record(TraceStep(
                check: "allow rule \(rule.name)", outcome: matched ? .pass : .skip,
                detail: matched ? "matched" : "condition false", location: rule.location))
            if matched { return Decision(effect: .allow, reason: .allowed, policy: rule.location) }
        }

        let template = action.messages[failure.decision.reason] ?? defaultDenyMessage
        failure.decision.message = template.render(failure.facts)
        return failure.decision
    }

    private func defaultDeny() -> Decision {
        Decision(effect: .deny, reason: .defaultDeny, message: defaultDenyMessage.render(MessageFacts(action: "", resource: "")))
    }

    private func rulesToConsider(type: String, action: ActionPlan, effect: Effect, useIndex: Bool) -> [Int] {
        if useIndex { return effect == .deny ? action.denyRules : action.allowRules }
        return rules.indices.filter { rules[$0].effect == effect && rules[$0].applies(toType: type, action: action.name) }
    }

    /// The subject's standing on the resource: whether it owns it (by the owner field, or by holding the
    /// declared owner role as a member) and the role conditions see as `resource.role`.
    private func standing(of subject: Subject, signedIn: Bool, on resource: Resource, type: ResourceTypePlan) -> (isOwner: Bool, role: String?) {
        guard signedIn, let id = subject.id else { return (false, nil) }
        if let owner = type.owner, owner.read(resource) == id { return (true, type.ownerRole ?? "owner") }
        guard let role = resource.members[id] else { return (false, nil) }
        return (role == type.ownerRole, role)
    }

    private struct Failure {
        var decision: Decision
        var facts: MessageFacts
    }

    private func firstFailedRequirement<T: Tracer>(
        _ action: ActionPlan, type: ResourceTypePlan, input: EvaluationInput, tier: Int, isOwner: Bool, role: String?, tracer: inout T
    ) -> Failure? {
        let request = input.request
        func fail(_ reason: Reason, at location: SourceLocation?, _ detail: String, _ fill: (inout MessageFacts) -> Void = { _ in }) -> Failure {
            tracer.record(TraceStep(check: reason.rawValue, outcome: .fail, detail: detail, location: location))
            var facts = MessageFacts(action: action.name, resource: type.name)
            fill(&facts)
            return Failure(decision: Decision(effect: .deny, reason: reason, policy: location), facts: facts)
        }

        if let location = action.signIn {
            guard input.signedIn else { return fail(.unauthenticated, at: location, "sign-in required, subject is signed out") }
            tracer.record(TraceStep(check: "sign-in", outcome: .pass, detail: "signed in", location: location))
        }

        if let auth = action.auth {
            let method = request.subject.auth?.method
            if !auth.methods.isEmpty, !(method.map(auth.methods.contains) ?? false) {
                return fail(.stepUpRequired, at: auth.location, "needs \(auth.methods.joined(separator: " or ")), verified by \(method ?? "nothing")") {
                    $0.methods = auth.methods
                    $0.maxAge = auth.maxAge.map(Self.formatDuration)
                }
            }
            if let maxAge = auth.maxAge {
                guard let at = request.subject.auth?.verifiedAt, input.now.timeIntervalSince(at) <= maxAge else {
                    return fail(.stepUpRequired, at: auth.location, "verification older than \(Self.formatDuration(maxAge)) or missing") {
                        $0.methods = auth.methods
                        $0.maxAge = Self.formatDuration(maxAge)
                    }
                }
            }
            tracer.record(TraceStep(check: "auth", outcome: .pass, detail: "method and freshness satisfied", location: auth.location))
        }

        if let needed = action.appRoles {
            guard request.subject.roles.contains(where: needed.roles.contains) else {
                return fail(.roleRequired, at: needed.location, "needs app role \(needed.roles.joined(separator: " or "))") {
                    $0.roles = needed.displayNames
                }
            }
            tracer.record(TraceStep(check: "app role", outcome: .pass, detail: "has \(needed.roles.joined(separator: " or "))", location: needed.location))
        }

        if let membership = action.membership {
            if isOwner {
                tracer.record(TraceStep(check: "membership", outcome: .pass, detail: "owner", location: membership.location))
            } else if let role {
                guard membership.openToMembers || membership.grantingRoles.contains(role) else {
                    return fail(membership.ownerOnly ? .ownerOnly : .accessDenied, at: membership.location, "role '\(role)' does not grant '\(action.name)'")
                }
                tracer.record(TraceStep(check: "membership", outcome: .pass, detail: "role '\(role)' grants '\(action.name)'", location: membership.location))
            } else {
                return fail(.notMember, at: membership.location, "subject is not a member")
            }
        }

        if let feature = action.feature {
            guard feature.tierHas[tier] else {
                let upgrade = tiers[feature.upgradeTo]
                var failure = fail(.requiresUpgrade, at: feature.location, "tier '\(tiers[tier].id)' lacks feature '\(feature.id)'") {
                    $0.feature = feature.name
                    $0.tier = upgrade.name
                    $0.price = upgrade.price
                }
                failure.decision.upgradeTo = upgrade.id
                return failure
            }
            tracer.record(TraceStep(check: "feature \(feature.id)", outcome: .pass, detail: "tier '\(tiers[tier].id)' has it", location: feature.location))
        }

        if let limit = action.limit {
            if let cap = limit.caps[tier] {
                let used = request.resource.usage[limit.counter] ?? 0
                if used >= cap {
                    let upgrade = limit.upgrades[tier].map { tiers[$0] }
                    var failure = fail(.limitExceeded, at: limit.capLocations[tier] ?? limit.location, "\(used) of \(cap) \(limit.counter) used") {
                        $0.limit = cap
                        $0.limitName = limit.name
                        $0.used = used
                        $0.remaining = 0
                        $0.tier = upgrade?.name
                        $0.price = upgrade?.price
                    }
                    failure.decision.limit = cap
                    failure.decision.used = used
                    failure.decision.remaining = 0
                    failure.decision.upgradeTo = upgrade?.id
                    return failure
                }
                tracer.record(TraceStep(check: "limit \(limit.id)", outcome: .pass, detail: "\(used) of \(cap) used", location: limit.location))
            } else {
                tracer.record(TraceStep(check: "limit \(limit.id)", outcome: .pass, detail: "unlimited on '\(tiers[tier].id)'", location: limit.location))
            }
        }

        if let consent = action.consent {
            guard let condition = consent.condition, condition.evaluate(input) == true else {
                return fail(.consentRequired, at: consent.location, consent.condition == nil ? "consent can never be given" : "privacy settings do not consent") {
                    $0.consent = consent.name
                }
            }
            tracer.record(TraceStep(check: "consent", outcome: .pass, detail: condition.source, location: consent.location))
        }
        return nil
    }

    static func formatDuration(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) hour\(seconds == 3600 ? "" : "s")" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60)) minute\(seconds == 60 ? "" : "s")" }
        return "\(Int(seconds)) second\(seconds == 1 ? "" : "s")"
    }
}
