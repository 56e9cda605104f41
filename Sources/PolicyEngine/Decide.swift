import Foundation
import PolicyModel

extension CompiledPolicy {
    /// Decides one request. Pure: the same request (with `context.now` set) always gets the same decision.
    public func decide(_ request: Request) -> Decision {
        var tracer = NoTracer()
        return table.evaluate(request, useIndex: true, tracer: &tracer)
    }

    /// Decides a request already in this policy's vocabulary: the same decision as `decide(_: Request)` over the
    /// request it was interned from, without comparing or hashing a name.
    ///
    /// The ids must come from this policy's `vocabulary`. When the action reads the request
    /// (`vocabulary.readsRequest(_:)`), `request.request` must be set: deciding without it is a programmer error.
    public func decide(_ request: InternedRequest) -> Decision {
        var tracer = NoTracer()
        let table = self.table
        guard let action = request.action, action.slot >= 0, Int(action.slot) < table.entries.count else { return table.defaultDenyDecision }
        return table.withEntry(Int(action.slot)) { table.evaluate(request, entry: $0, slot: Int(action.slot), useIndex: true, tracer: &tracer) }
    }

    /// Decides one request and returns the trace of every check and rule considered, with locations.
    public func explain(_ request: Request) -> Explanation {
        var events: [TraceEvent] = []
        events.reserveCapacity(12)
        let decision = table.evaluate(request, useIndex: true, tracer: &events)
        return Explanation(decision: decision, trace: table.render(events), events: events)
    }

    /// Decides as `decide` does and leaves in `events` (emptied first, its storage kept) what the engine considered:
    /// for tools that walk many requests and read the events, not the words.
    package func decide(_ request: Request, recording events: inout [TraceEvent]) -> Decision {
        events.removeAll(keepingCapacity: true)
        return table.evaluate(request, useIndex: true, tracer: &events)
    }

    /// Decides without the (resource type, action) rule index, scanning every rule, and renders every message
    /// from its template at decide time: tests compare both paths.
    package func decideUnindexed(_ request: Request) -> Decision {
        var tracer = NoTracer()
        return table.evaluate(request, useIndex: false, tracer: &tracer)
    }

    /// Resolves a resource type and action once, for an app that decides the same action many times.
    ///
    /// Returns nil when the policy does not know the pair (`decide` would answer `default_deny`).
    /// `decide(_:prepared:)` then skips the name lookup. A handle stays valid for this policy only; given to
    /// another policy, or with a request for another type or action, it is ignored and the names are looked up.
    public func prepare(resourceType: String, action: String) -> PreparedAction? {
        table.slot(type: resourceType, action: action).map { PreparedAction(resourceType: resourceType, action: action, slot: $0) }
    }

    /// Decides `request` using a prepared handle for its resource type and action: always the same decision as
    /// `decide(request)`, without looking the names up when the handle matches.
    public func decide(_ request: Request, prepared: PreparedAction) -> Decision {
        var tracer = NoTracer()
        let table = self.table
        if prepared.slot < table.entries.count {
            let entry = table.entries[prepared.slot]
            if entry.plan.name == request.action, entry.typeName == request.resource.type {
                return table.evaluate(request, entry: entry, slot: prepared.slot, useIndex: true, tracer: &tracer)
            }
        }
        return table.evaluate(request, useIndex: true, tracer: &tracer)
    }

    /// The tier this policy applies to the subject at `now`: its own while signed in, known and active, else the default.
    package func effectiveTier(of subject: Subject, signedIn: Bool, now: Date) -> Int {
        table.effectiveTier(of: subject, signedIn: signedIn, now: now)
    }

    package static func formatDuration(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) hour\(seconds == 3600 ? "" : "s")" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60)) minute\(seconds == 60 ? "" : "s")" }
        return "\(Int(seconds)) second\(seconds == 1 ? "" : "s")"
    }
}

/// A resource type and action resolved by `CompiledPolicy.prepare(resourceType:action:)`.
public struct PreparedAction: Sendable, Hashable {
    /// The resource type the handle stands for.
    public let resourceType: String
    /// The action the handle stands for.
    public let action: String
    let slot: Int
}

extension DecisionTable {
    /// The tier this policy applies to the subject at `now`.
    @inline(__always)
    func effectiveTier(of subject: Subject, signedIn: Bool, now: Date) -> Int {
        guard signedIn, let name = subject.tier, let index = tierSlot(name) else { return defaultTier }
        return Subject.subscriptionHasLapsed(expiry: subject.subscriptionExpiry, at: now) ? defaultTier : index
    }

    @inline(__always)
    func evaluate<T: Tracer>(_ request: Request, useIndex: Bool, tracer: inout T) -> Decision {
        guard let slot = slot(type: request.resource.type, action: request.action) else {
            tracer.record(self.unknownPairEvent(request))
            return useIndex ? defaultDenyDecision : Decision(effect: .deny, reason: .defaultDeny, message: defaultDenyMessage.render(MessageFacts(action: "", resource: "")))
        }
        return withEntry(slot) { evaluate(request, entry: $0, slot: slot, useIndex: useIndex, tracer: &tracer) }
    }

    /// Calls `body` with the entry at `slot`, lent without a retain and release (~40 instructions a decision): the
    /// table holds its entries for its whole life and never replaces one, and `self` is alive for the call.
    @inline(__always)
    func withEntry<Result>(_ slot: Int, _ body: (ActionEntry) -> Result) -> Result {
        withExtendedLifetime(self) {
            Unmanaged.passUnretained(entries[slot])._withUnsafeGuaranteedRef(body)
        }
    }

    private func unknownPairEvent(_ request: Request) -> TraceEvent {
        guard let type = resourceTypes[request.resource.type] else { return .unknownResourceType(request.resource.type) }
        return .unknownAction(request.action, type: type.name)
    }

    @inline(__always)
    func evaluate<Input: DecideInput, T: Tracer>(_ request: Input, entry: ActionEntry, slot: Int, useIndex: Bool, tracer: inout T) -> Decision {
        tracer.record(.action(slot: slot))
        let signedIn = request.signedIn
        let now = request.decisionTime
        let tier = request.effectiveTier(self, signedIn: signedIn, now: now)
        tracer.record(.subject(signedIn: signedIn, tier: tier))
        let (isOwner, role) = entry.needsStanding || !useIndex ? request.resourceStanding(self, signedIn: signedIn, entry: entry) : (false, nil)
        // Conditions see the request through a borrowed pointer; an action without conditions needs no input at all,
        // and neither does one whose only condition is a consent compiled to a `ConsentTest`, read from the request
        // (the tree and its input cost ~500 instructions on each of research-crawler's consent requests, issue 41).
        guard (Input.decidesConsentByTest ? entry.needsConditionInput : entry.hasConditions) || !useIndex else {
            return decide(
                request, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: isOwner, role: role, useIndex: useIndex,
                tracer: &tracer,
                evaluate: { _ in
                    // Only the consent's condition comes here: no rule of this action has one.
                    guard Input.decidesConsentByTest, let test = entry.consentTest else { return nil }
                    return .bool(request.consentHolds(test))
                })
        }
        guard Input.decidesConsentByTest else {
            return request.withConditionInput(self, entry: entry, now: now, tier: tier, signedIn: signedIn, role: role) { input in
                decide(
                    request, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: isOwner, role: role, useIndex: useIndex,
                    tracer: &tracer, evaluate: { $0.evaluate(input) })
            }
        }
        return decideWithConditionInput(
            request, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: isOwner, role: role, useIndex: useIndex, tracer: &tracer)
    }

    /// `decide` with the conditions' input built, out of line: a second copy of the checks inlined beside the first
    /// made the optimiser stop inlining into the whole function (its block limit), so that array counts and the like
    /// became calls on every decision (issue 41).
    @inline(never)
    private func decideWithConditionInput<Input: DecideInput, T: Tracer>(
        _ request: Input, entry: ActionEntry, signedIn: Bool, now: Date, tier: Int, isOwner: Bool, role: Input.Role?, useIndex: Bool,
        tracer: inout T
    ) -> Decision {
        request.withConditionInput(self, entry: entry, now: now, tier: tier, signedIn: signedIn, role: role) { input in
            decide(
                request, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: isOwner, role: role, useIndex: useIndex,
                tracer: &tracer, evaluate: { $0.evaluate(input) })
        }
    }

    @inline(__always)
    private func decide<Input: DecideInput, T: Tracer>(
        _ request: Input, entry: ActionEntry, signedIn: Bool, now: Date, tier: Int, isOwner: Bool, role: Input.Role?, useIndex: Bool,
        tracer: inout T, evaluate: (ConditionNode) -> ConditionValue?
    ) -> Decision {
        // An explicit deny beats everything else.
        let denyRules = useIndex ? entry.plan.denyRules : rulesToConsider(entry, effect: .deny)
        for (position, index) in denyRules.enumerated() {
            let condition = Self.value(useIndex ? entry.denyConditions[position] : rules[index].condition?.root, evaluate)
            let matched = condition ?? Effect.deny.matchesWhenConditionErrors
            tracer.record(.rule(index: index, condition: condition, applies: matched))
            if matched {
                if useIndex { return entry.denyRuleDecisions[position] }
                let message = MessageBuilder.ruleMessage(rules[index], plan: entry.plan, typeName: entry.typeName, defaultDenyMessage: defaultDenyMessage)
                return Decision(effect: .deny, reason: .deniedByRule, message: message, policy: rules[index].location)
            }
        }

        guard let failure = firstFailedRequirement(
            request, entry: entry, signedIn: signedIn, now: now, tier: tier, isOwner: isOwner, role: role, tracer: &tracer, evaluate: evaluate)
        else {
            guard let caps = entry.limitCaps else { return entry.allowDecision.copied }
            var decision = entry.allowDecision
            if let cap = caps[tier] {
                let used = request.usedCount(entry)
                // `used` comes from the request and may be any integer; Int.min must not trap.
                let (remaining, overflow) = cap.subtractingReportingOverflow(used)
                decision.setFigures(limit: cap, used: used, remaining: overflow ? Int.max : Swift.max(0, remaining))
            }
            return decision
        }

        // An allow rule can grant what the requirements refused.
        let allowRules = useIndex ? entry.plan.allowRules : rulesToConsider(entry, effect: .allow)
        for (position, index) in allowRules.enumerated() {
            let condition = Self.value(useIndex ? entry.allowConditions[position] : rules[index].condition?.root, evaluate)
            let matched = condition ?? Effect.allow.matchesWhenConditionErrors
            tracer.record(.rule(index: index, condition: condition, applies: matched))
            if matched { return useIndex ? entry.allowRuleDecisions[position] : Decision(effect: .allow, reason: .allowed, policy: rules[index].location) }
        }

        // A pre-built deny is returned here, inlined: calling `decision(for:)` for it cost ~40 instructions of
        // prologue and a second copy of the decision (issue 41).
        if useIndex, let prebuilt = entry.denyDecision(failure.reason) { return prebuilt }
        return decision(for: failure, entry: entry, tier: tier, useIndex: useIndex)
    }

    /// The deny for a failed requirement, message included, built in one go.
    private func decision(for failure: RequirementFailure, entry: ActionEntry, tier: Int, useIndex: Bool) -> Decision {
        let reason = failure.reason
        // The pre-built decisions first: reading `entry.plan` copies the whole plan struct (~90 instructions of memcpy
        // and its retains), which only the fallback below needs.
        if useIndex, let decision = entry.denyDecision(reason) { return decision }
        if useIndex, reason == .limitExceeded, tier < entry.limitDecisions.count, var decision = entry.limitDecisions[tier],
            let cap = entry.limitCaps?[tier]
        {
            decision.setFigures(limit: cap, used: failure.used, remaining: 0)
            return decision
        }
        let plan = entry.plan
        let message: String
        if useIndex, let rendered = entry.renderedMessage(reason, tier: tier) {
            message = rendered
        } else {
            let facts = MessageBuilder.facts(reason, plan: plan, typeName: entry.typeName, tiers: tiers, tier: tier, used: failure.used)
            message = MessageBuilder.template(reason, plan: plan, defaultDenyMessage: defaultDenyMessage).render(facts)
        }
        var decision = ActionEntry.deny(reason, message: message, plan: plan, tiers: tiers, tier: tier)
        if reason == .limitExceeded, let cap = plan.limit?.caps[tier] { decision.setFigures(limit: cap, used: failure.used, remaining: 0) }
        return decision
    }

    /// The value of a rule's condition: true when it has none, nil when it fails to evaluate (what the rule then
    /// does is `Effect.matchesWhenConditionErrors`).
    @inline(__always)
    private static func value(_ root: ConditionNode?, _ evaluate: (ConditionNode) -> ConditionValue?) -> Bool? {
        guard let root else { return true }
        switch evaluate(root) {
        case .bool(let b)?: return b
        default: return nil
        }
    }

    private func rulesToConsider(_ entry: ActionEntry, effect: Effect) -> [Int] {
        rules.indices.filter { rules[$0].effect == effect && rules[$0].applies(toType: entry.typeName, action: entry.plan.name) }
    }

    /// The subject's standing on the resource: whether it owns it (by the owner field, or by holding the
    /// declared owner role as a member) and the role conditions see as `resource.role`.
    /// Ownership comes from the owner field or from holding the declared owner role as a member, never from a role
    /// merely named "owner". `withConditionInput` uses it too.
    func standing(_ request: Request, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: String?) {
        let (isOwner, role) = standingRole(request, signedIn: signedIn, entry: entry)
        return (isOwner, role.map { request.roleName($0, entry: entry) })
    }

    /// `standing`, the role held as a `RequestRole` (no `String` owned): what `decide` reads.
    @inline(__always)
    func standingRole(_ request: Request, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: RequestRole?) {
        guard signedIn, let id = request.subject.id else { return (false, nil) }
        if let owner = entry.owner, owner.isOwner(id, of: request.resource) {
            return (true, RequestRole(ofOwner: true, small: SmallName(entry.ownerRole ?? "owner")))
        }
        guard let role = request.resource.members.value(forSmall: id) else { return (false, nil) }
        return (entry.ownerRole.map { SmallName.equal(role, $0) } ?? false, RequestRole(ofOwner: false, small: SmallName(role)))
    }
}
