import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// Proves a set's declared invariants by enumerating its finite request space, and lints what the same
/// enumeration shows: rules that never decide, conditions that never change, actions nobody can take.
public enum InvariantProver {
    /// Spaces of one (resource type, action) larger than this are not enumerated; the report says so.
    public static let maxRequestsPerAction = 2_000_000

    /// The codes of the lints the request space finds, with the registry's line on what each finds.
    public static var lintCodes: [(code: String, summary: String)] { SpaceLint.codes.map { ($0.rawValue, $0.summary) } }

    public static func prove(_ result: PolicyLoadResult) -> InvariantReport {
        guard let policy = result.policy else { return InvariantReport() }
        var diagnostics: [Diagnostic] = []
        let invariants = result.declarations.invariants.compactMap { CheckedInvariant($0, policy: policy, declarations: result.declarations, diagnostics: &diagnostics) }
        var hints = SpaceHints()
        for invariant in invariants {
            hints.appRoles.formUnion(invariant.appRoles?.subtracting(["none"]) ?? [])
            hints.appRoles.formUnion(invariant.withoutAppRoles ?? [])
            hints.authMethods.formUnion(invariant.authMethods?.subtracting(["none", AuthMethod.anonymous]) ?? [])
            if invariant.roles != nil { hints.standingEverywhere = true }
            if invariant.authMethods != nil { hints.authEverywhere = true }
        }
        var results = invariants.map { InvariantResult(name: $0.name, location: $0.location, checked: 0, counterexample: nil) }
        var lint = SpaceLint(policy: policy)
        var spaceSize = 0
        var sampled: [Int: [String]] = [:]

        // Each (type, action) is enumerated on its own, on every core; the parts are joined in enumeration order,
        // so the report is the same as a sequential run's (first counterexample, first example of a lint).
        let context = lint
        let parts = RequestSpace.build([policy], hints: hints).concurrentMap { space in
            enumerate(space, policy: policy, invariants: invariants, lint: context)
        }
        for part in parts {
            diagnostics += part.diagnostics
            spaceSize += part.enumerated
            for (i, note) in part.sampled { sampled[i, default: []].append(note) }
            for i in results.indices {
                results[i].checked += part.checked[i]
                if results[i].counterexample == nil { results[i].counterexample = part.counterexamples[i] }
            }
            lint.merge(part.lint)
        }

        for (i, invariant) in invariants.enumerated() {
            if results[i].checked == 0 {
                diagnostics.append(InvariantSelectsNothing(invariant: invariant.name, at: invariant.location).diagnostic)
            }
            if let notes = sampled[i], results[i].passed {
                diagnostics.append(
                    InvariantNotProved(invariant: invariant.name, checked: results[i].checked, sampled: notes, at: invariant.location).diagnostic)
            }
        }
        diagnostics += lint.diagnostics()
        return InvariantReport(results: results, diagnostics: diagnostics.sortedForDisplay(), spaceSize: spaceSize)
    }

    /// What enumerating one (type, action) found.
    private struct SpacePart: Sendable {
        var enumerated = 0
        var diagnostics: [Diagnostic] = []
        /// Invariant index to a note saying where the space only samples.
        var sampled: [(Int, String)] = []
        /// By invariant index.
        var checked: [Int]
        var counterexamples: [Counterexample?]
        var lint: SpaceLint
    }

    private static func enumerate(_ space: ActionSpace, policy: CompiledPolicy, invariants: [CheckedInvariant], lint: SpaceLint) -> SpacePart {
        var part = SpacePart(
            checked: Array(repeating: 0, count: invariants.count), counterexamples: Array(repeating: nil, count: invariants.count), lint: lint)
        guard let type = policy.resourceTypes[space.type], let action = type.actions[space.action] else { return part }
        let applicable = invariants.indices.filter { invariants[$0].applies(to: type, action) }
        let count = space.count
        if count > maxRequestsPerAction {
            part.diagnostics.append(
                SpaceTooLarge(
                    space: "\(space.type).\(space.action)", count: count, check: .invariants(bound: maxRequestsPerAction), at: action.location
                ).diagnostic)
            part.sampled = applicable.map { ($0, "\(space.type).\(space.action) not enumerated") }
            return part
        }
        part.enumerated = count
        for gap in space.gaps {
            part.diagnostics.append(
                SpaceNotExhaustive(
                    space: "\(space.type).\(space.action)", construct: gap.construct, check: .invariants(bound: maxRequestsPerAction),
                    at: gap.location ?? action.location
                ).diagnostic)
        }
        if !space.isExhaustive { part.sampled = applicable.map { ($0, "\(space.type).\(space.action)") } }
        part.lint.begin(space, type: type, action: action)
        var events: [TraceEvent] = []
        space.forEach { point in
            let request = space.request(point)
            let decision = policy.decide(request, recording: &events)
            part.lint.record(point, request: request, decision: decision, events: events)
            for i in applicable where invariants[i].matches(point, request: request, in: space, policy: policy) {
                part.checked[i] += 1
                guard part.counterexamples[i] == nil, let expected = invariants[i].violation(decision, events: events) else { continue }
                part.counterexamples[i] = Counterexample(request: request, expected: expected, explanation: policy.explain(request))
            }
        }
        part.lint.end()
        return part
    }
}

/// An invariant whose names were all found in the policy.
struct CheckedInvariant {
    let name: String
    let location: SourceLocation
    let expect: InvariantExpectation
    let reasons: Set<Reason>
    let resources: Set<String>?
    let actions: Set<String>?
    let subjects: Set<String>?
    let tiers: Set<String>?
    let roles: Set<String>?
    let appRoles: Set<String>?
    let withoutAppRoles: Set<String>?
    let authMethods: Set<String>?
    let features: Set<String>?
    let limits: Set<String>?

    static let subjectClasses = ["signed-out", "anonymous", "signed-in", "expired"]

    init?(_ decl: InvariantDecl, policy: CompiledPolicy, declarations: PolicyDeclarations, diagnostics: inout [Diagnostic]) {
        var ok = true
        func check(_ values: [Located<String>]?, _ kind: String, known: [String]) -> Set<String>? {
            guard let values else { return nil }
            for value in values where !known.contains(value.value) {
                ok = false
                diagnostics.append(InvariantUnknownName(invariant: decl.name, kind: kind, name: value, known: known).diagnostic)
            }
            return Set(values.map(\.value))
        }
        let selector = decl.selector
        let types = policy.resourceTypeNames
        resources = check(selector.resources, "resource type", known: types)
        let selectedTypes = resources.map { Array($0).sorted() } ?? types
        actions = check(selector.actions, "action", known: Array(Set(selectedTypes.flatMap(policy.actionNames(of:)))).sorted())
        subjects = check(selector.subjects, "subject class", known: Self.subjectClasses)
        tiers = check(selector.tiers, "tier", known: policy.tierIDs)
        let roleNames = selectedTypes.flatMap { policy.resourceTypes[$0]?.roleNames ?? [] }
        roles = check(selector.roles, "role", known: ["owner", "non-member"] + Array(Set(roleNames)).sorted())
        appRoles = check(selector.appRoles, "app role", known: ["none"] + declarations.appRoles.map(\.id.value))
        withoutAppRoles = check(selector.withoutAppRoles, "app role", known: declarations.appRoles.map(\.id.value))
        authMethods = check(selector.authMethods, "auth method", known: ["none"] + AuthMethod.all)
        features = check(selector.features, "feature", known: declarations.features.map(\.id.value))
        limits = check(selector.limits, "limit", known: declarations.limits.map(\.id.value))
        guard ok else { return nil }
        name = decl.name
        location = decl.location
        expect = decl.expect.value
        reasons = Set(decl.reasons.compactMap { Reason(rawValue: $0.value) })
    }

    /// Whether the invariant speaks about this (resource type, action) at all.
    func applies(to type: ResourceTypePlan, _ action: ActionPlan) -> Bool {
        if let resources, !resources.contains(type.name) { return false }
        if let actions, !actions.contains(action.name) { return false }
        if let features, !(action.feature.map { features.contains($0.id) } ?? false) { return false }
        if let limits, !(action.limit.map { limits.contains($0.id) } ?? false) { return false }
        return true
    }

    /// Whether the invariant selects this request (the one at `point` of the action's space).
    func matches(_ point: SpacePoint, request: Request, in space: ActionSpace, policy: CompiledPolicy) -> Bool {
        let subject = space.subject(point)
        let now = space.now(point)
        if let subjects {
            let matched: Bool
            switch subject {
            case .signedOut: matched = subjects.contains("signed-out")
            case .anonymous: matched = subjects.contains("anonymous")
            case .tier: matched = subjects.contains("signed-in") || (subjects.contains("expired") && subject.isExpired(now: now))
            }
            if !matched { return false }
        }
        if let tiers, !tiers.contains(policy.effectiveTierID(of: request.subject, now: now)) { return false }
        if let roles, !roles.contains(space.standing(point).label) { return false }
        if let appRoles {
            let held = space.appRoles(point)
            if !(held.isEmpty ? appRoles.contains("none") : held.contains(where: appRoles.contains)) { return false }
        }
        if let withoutAppRoles, space.appRoles(point).contains(where: withoutAppRoles.contains) { return false }
        if let authMethods {
            let method: String
            switch (subject, space.auth(point)) {
            case (.anonymous, _): method = AuthMethod.anonymous
            case (_, .none): method = "none"
            case (_, .method(let m, _)): method = m
            }
            if !authMethods.contains(method) { return false }
        }
        return true
    }

    /// What the invariant required and `decision` did not give, or nil when it holds; `events`, what `decide`
    /// emitted reaching it, say whether a rule decided (none: the requirements did).
    func violation(_ decision: Decision, events: [TraceEvent] = []) -> String? {
        switch expect {
        case .allow:
            return decision.effect == .allow ? nil : "allow"
        case .deny:
            if decision.effect != .deny { return reasons.isEmpty ? "deny" : "deny with reason \(reasonList)" }
            if !reasons.isEmpty, !reasons.contains(decision.reason) { return "deny with reason \(reasonList)" }
            return nil
        case .noRuleAllows:
            let byRule = decision.effect == .allow && TraceEvent.decidingRule(in: events) != nil
            return byRule ? "no allow rule deciding" : nil
        case .denyHasMessage:
            guard decision.effect == .deny else { return nil }
            return (decision.message ?? "").isEmpty ? "a message on the deny" : nil
        }
    }

    private var reasonList: String { reasons.map(\.rawValue).sorted().joined(separator: " or ") }
}
