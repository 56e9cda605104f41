import Foundation
import PolicyEngine
import PolicyModel

/// Lints that need the request space: what happens on every request, not what the text says.
///
/// One pass over the space gathers the totals every such lint needs; each finding is a type of its own in
/// `Lints/Space/` (its reasoning, data, message and help): `ActionNeverAllowed`, `DenyWithoutMessage`,
/// `RuleShadowed`, `RuleNeverFires`, `ConstantCondition`, `AllowWiderThanDeny`.
struct SpaceLint {
    /// Every code this lint reports, with what it finds: for `--help`, docs and the corpus.
    static let codes: [DiagnosticCode] = [
        .actionNeverAllowed, .denyWithoutMessage, .ruleShadowed, .ruleNeverFires, .conditionAlwaysTrue, .conditionAlwaysFalse,
        .allowWiderThanDeny,
    ]

    private let policy: CompiledPolicy

    private struct RuleStats {
        var evaluated = 0
        var isTrue = 0
        var isFalse = 0
        var decided = 0
        /// Who decided the requests the rule matched but did not decide: a rule's index, or nil for the requirements.
        var preempted: [Int?: Int] = [:]
        var gapped = false

        mutating func add(_ other: RuleStats) {
            evaluated += other.evaluated
            isTrue += other.isTrue
            isFalse += other.isFalse
            decided += other.decided
            preempted.merge(other.preempted, uniquingKeysWith: +)
            gapped = gapped || other.gapped
        }
    }

    private struct PairStats {
        var allowOnly = 0
        var denyOnly = 0
        var both = 0
        var example: String?

        mutating func add(_ other: PairStats) {
            allowOnly += other.allowOnly
            denyOnly += other.denyOnly
            both += other.both
            example = example ?? other.example
        }
    }

    /// Totals by rule index and by pair, over the actions folded in so far (sparse: a policy may have 100,000 rules
    /// and one action sees a handful).
    private var rules: [Int: RuleStats] = [:]
    /// Adjacent (allow, deny) rule pairs in the same file whose scopes meet.
    private var pairs: [(allow: Int, deny: Int)] = []
    private var pairStats: [Int: PairStats] = [:]
    private var findings: [Diagnostic] = []
    /// The current action's totals, by position in `activeIndex` and `activePairs`.
    private var actionStats: [RuleStats] = []
    private var actionPairStats: [PairStats] = []

    // The action being enumerated, flattened so recording a request copies no plan.
    private var space: ActionSpace?
    private var action: ActionPlan?
    /// The action's rules (deny rules, then allow rules) as parallel arrays: rule index, condition, error outcome.
    private var activeIndex: [Int] = []
    private var activeRoot: [ConditionNode?] = []
    /// Whether each rule matches when its condition errors (`Effect.matchesWhenConditionErrors`).
    private var activeMatchesOnError: [Bool] = []
    /// Pairs with a rule on this action: the pair, and the positions of its rules in `active`.
    private var activePairs: [(pair: Int, allow: Int?, deny: Int?)] = []
    private var matched: [Bool] = []
    /// Per position, for the request being recorded: whether the engine considered the rule, and its condition's value.
    private var considered: [Bool] = []
    private var values: [Bool?] = []
    private var allowed = 0
    private var total = 0
    private var denyReasons: [Reason: Int] = [:]
    private var missingMessage: (SourceLocation?, Request)?

    /// Finds the adjacent (allow, deny) pairs once; copies of this value then lint actions independently and
    /// `merge` joins them.
    init(policy: CompiledPolicy) {
        self.policy = policy
        // The actions each rule applies to, from the plans' rule lists (one pass over every action).
        var actionsOf: [Int: Set<Int>] = [:]
        var actionID = 0
        for type in policy.resourceTypes.values {
            for action in type.actions.values {
                for index in action.denyRules + action.allowRules { actionsOf[index, default: []].insert(actionID) }
                actionID += 1
            }
        }
        let ordered = policy.rules.indices.sorted { policy.rules[$0].location < policy.rules[$1].location }
        for (a, b) in zip(ordered, ordered.dropFirst()) {
            let (x, y) = (policy.rules[a], policy.rules[b])
            guard x.location.file == y.location.file, x.effect != y.effect else { continue }
            let (allow, deny) = x.effect == .allow ? (a, b) : (b, a)
            if let left = actionsOf[allow], let right = actionsOf[deny], !left.isDisjoint(with: right) { pairs.append((allow, deny)) }
        }
    }

    /// Folds another copy's actions into this one; call in the order the actions were enumerated.
    mutating func merge(_ other: SpaceLint) {
        for (index, stats) in other.rules { rules[index, default: RuleStats()].add(stats) }
        for (pair, stats) in other.pairStats { pairStats[pair, default: PairStats()].add(stats) }
        findings += other.findings
    }

    mutating func begin(_ space: ActionSpace, type: ResourceTypePlan, action: ActionPlan) {
        self.space = space
        self.action = action
        let indexes = action.denyRules + action.allowRules
        activeIndex = indexes
        activeRoot = indexes.map { policy.rules[$0].condition?.root }
        activeMatchesOnError = indexes.map { policy.rules[$0].effect.matchesWhenConditionErrors }
        actionStats = Array(repeating: RuleStats(), count: indexes.count)
        for position in indexes.indices where !space.isExhaustive { actionStats[position].gapped = true }
        let position = Dictionary(indexes.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        activePairs = pairs.enumerated().compactMap { p, pair in
            let (a, d) = (position[pair.allow], position[pair.deny])
            return a == nil && d == nil ? nil : (p, a, d)
        }
        matched = Array(repeating: false, count: indexes.count)
        considered = Array(repeating: false, count: indexes.count)
        values = Array(repeating: nil, count: indexes.count)
        actionPairStats = Array(repeating: PairStats(), count: activePairs.count)
        allowed = 0
        total = 0
        denyReasons = [:]
        missingMessage = nil
    }

    /// Folds in one request: its decision, and the events `decide` emitted for it (which rules it considered, how
    /// their conditions came out, which one decided).
    mutating func record(_ point: SpacePoint, request: Request, decision: Decision, events: [TraceEvent] = []) {
        total += 1
        if decision.effect == .allow {
            allowed += 1
        } else {
            denyReasons[decision.reason, default: 0] += 1
            if (decision.message ?? "").isEmpty, missingMessage == nil { missingMessage = (decision.policy, request) }
        }
        guard !activeIndex.isEmpty else { return }
        // The rules the engine considered, from its events; nil decider: the requirements decided.
        for position in considered.indices { considered[position] = false }
        var decider: Int?
        for event in events {
            guard case .rule(let index, let condition, let applies) = event, let position = activeIndex.firstIndex(of: index) else { continue }
            considered[position] = true
            values[position] = condition
            if applies { decider = position }
        }
        // The rules past the one that decided were not reached: the lint still asks what they would have done.
        if considered.contains(false) {
            let roots = activeRoot
            let reached = considered
            let rest = policy.withConditionInput(for: request) { input in
                roots.indices.map { position -> Bool? in
                    guard !reached[position] else { return nil }
                    guard let root = roots[position] else { return true }
                    if case .bool(let b)? = root.evaluate(input) { return b }
                    return nil
                }
            }
            guard let rest else { return }
            for position in rest.indices where !considered[position] { values[position] = rest[position] }
        }
        let byRule = decider.map { activeIndex[$0] }
        for position in values.indices {
            let value = values[position]
            if value == true { actionStats[position].isTrue += 1 } else if value == false { actionStats[position].isFalse += 1 }
            actionStats[position].evaluated += 1
            let matches = value ?? activeMatchesOnError[position]
            matched[position] = matches
            if decider == position {
                actionStats[position].decided += 1
            } else if matches {
                actionStats[position].preempted[byRule, default: 0] += 1
            }
        }
        for (q, (_, allow, deny)) in activePairs.enumerated() {
            let a = allow.map { matched[$0] } ?? false
            let d = deny.map { matched[$0] } ?? false
            if a && d { actionPairStats[q].both += 1 }
            if d && !a { actionPairStats[q].denyOnly += 1 }
            if a && !d {
                actionPairStats[q].allowOnly += 1
                if actionPairStats[q].example == nil, let space {
                    actionPairStats[q].example = "\(space.type).\(space.action) for " + space.describe(point).map { "\($0.axis) \($0.value)" }.joined(separator: ", ")
                }
            }
        }
    }

    mutating func end() {
        guard let action, let space else { return }
        for (position, index) in activeIndex.enumerated() { rules[index, default: RuleStats()].add(actionStats[position]) }
        for (q, entry) in activePairs.enumerated() { pairStats[entry.pair, default: PairStats()].add(actionPairStats[q]) }
        // A requirement written to refuse everyone (consent `when: false`) is the set saying nobody may: not a
        // mistake. So is an action every request of which a deny rule refuses.
        let deliberate = Requirement.allCases.contains { $0.refusesEveryone(in: action) }
            || (denyReasons.keys.allSatisfy { $0 == .deniedByRule } && !denyReasons.isEmpty)
        if total > 0, allowed == 0, !deliberate {
            let top = denyReasons.max { ($0.value, $1.key.rawValue) < ($1.value, $0.key.rawValue) }?.key
            findings.append(
                ActionNeverAllowed(action: SpaceAction(resourceType: space.type, action: action.name), total: total, mostCommon: top, at: action.location).diagnostic)
        }
        if let (location, request) = missingMessage {
            findings.append(
                DenyWithoutMessage(action: SpaceAction(resourceType: space.type, action: action.name), example: request, at: location ?? action.location).diagnostic)
        }
        self.space = nil
        self.action = nil
    }

    func diagnostics() -> [Diagnostic] {
        var result = findings
        for (index, rule) in policy.rules.enumerated() {
            guard let stats = rules[index], stats.evaluated > 0 else { continue }
            let facts = RuleFacts(name: rule.name, effect: rule.effect, gapped: stats.gapped)
            if let condition = rule.condition {
                if stats.isTrue == 0, stats.isFalse > 0 || condition.constantValue == false {
                    result.append(ConstantCondition(rule: facts, value: false, at: condition.location).diagnostic)
                    continue
                }
                if stats.isFalse == 0, stats.isTrue == stats.evaluated {
                    result.append(ConstantCondition(rule: facts, value: true, at: condition.location).diagnostic)
                }
            }
            guard stats.decided == 0 else { continue }
            // Ties go to the rule written first (by its location's text), as when the lint keyed by location.
            func order(_ index: Int?) -> String { index.map { policy.rules[$0].location.description } ?? "" }
            let top = stats.preempted.max { ($0.value, order($1.key)) < ($1.value, order($0.key)) }
            if let top, let index = top.key {
                let other = policy.rules[index]
                let winner = OtherRule(name: other.name, effect: other.effect, location: other.location)
                result.append(RuleShadowed(rule: facts, winner: winner, at: rule.location).diagnostic)
            } else if top != nil {
                result.append(RuleNeverFires(rule: facts, cause: .requirementsAllowFirst, at: rule.location).diagnostic)
            } else {
                result.append(RuleNeverFires(rule: facts, cause: .matchesNothing, at: rule.location).diagnostic)
            }
        }
        for (p, pair) in pairs.enumerated() {
            guard let stats = pairStats[p], stats.both > 0, stats.denyOnly == 0, stats.allowOnly > 0 else { continue }
            let allow = policy.rules[pair.allow], deny = policy.rules[pair.deny]
            result.append(
                AllowWiderThanDeny(
                    allow: allow.name, deny: OtherRule(name: deny.name, effect: deny.effect, location: deny.location), allowOnly: stats.allowOnly, example: stats.example,
                    at: allow.location
                ).diagnostic)
        }
        return result
    }
}
