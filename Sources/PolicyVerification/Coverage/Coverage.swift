import PolicyEngine
import PolicyModel

/// One thing a set's policy tests can exercise: a rule deciding, one branch of a rule's condition, or one
/// outcome (pass or fail) of one requirement of one action.
public struct CoverageItem: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// A rule that decided at least once.
        case rule
        /// One branch (true or false) of a rule's condition.
        case condition
        /// One outcome (pass or fail) of one of an action's requirements (a `Requirement` kind).
        case requirement
    }

    public var kind: Kind
    /// What a reader needs to find it: "deny rule no-kiosk-exports: condition true", "app.add_source: limit sources fails".
    public var name: String
    public var location: SourceLocation
    public var covered: Bool
}

/// Covered and total items of one policy file.
public struct FileCoverage: Sendable, Hashable {
    public var file: String
    public var covered: Int
    public var total: Int
    public var percent: Double { Coverage.percent(covered, of: total) }
}

/// Which rules, condition branches and requirement outcomes a set's policy tests exercised, per file.
public struct CoverageReport: Sendable, Hashable {
    /// Every item, in reading order (file, line, column, then name).
    public var items: [CoverageItem]

    public var covered: Int { items.count(where: \.covered) }
    public var total: Int { items.count }
    /// 100 when there is nothing to cover.
    public var percent: Double { Coverage.percent(covered, of: total) }
    public var uncovered: [CoverageItem] { items.filter { !$0.covered } }

    /// Per file, sorted by path.
    public var files: [FileCoverage] {
        var byFile: [String: FileCoverage] = [:]
        for item in items {
            byFile[item.location.file, default: FileCoverage(file: item.location.file, covered: 0, total: 0)].total += 1
            if item.covered { byFile[item.location.file]!.covered += 1 }
        }
        return byFile.values.sorted { $0.file < $1.file }
    }

    public init(items: [CoverageItem]) {
        self.items = items
    }
}

public enum Coverage {
    /// Covered over total as a percentage; 100 for an empty total.
    public static func percent(_ covered: Int, of total: Int) -> Double {
        total == 0 ? 100 : Double(covered) * 100 / Double(total)
    }

    /// "87.5%": one decimal, so a threshold comparison is never hidden by rounding in the other direction.
    public static func format(_ percent: Double) -> String {
        let tenths = (percent * 10).rounded(.down) / 10
        return tenths == tenths.rounded() ? "\(Int(tenths)).0%" : "\(tenths)%"
    }

    /// The coverage of a compiled policy by the traces of its test results.
    public static func measure(_ policy: CompiledPolicy, tests: [PolicyTestResult]) -> CoverageReport {
        var collector = CoverageCollector(policy: policy)
        for test in tests {
            if let request = test.request { collector.record(request, events: test.events) }
        }
        return collector.report()
    }
}

/// Enumerates a compiled policy's coverage items and marks those an explain trace exercised.
///
/// Counted from the trace events `CompiledPolicy.explain` emits (which rule, which requirement, how each came out),
/// never from the trace's words, so rewording an explain line cannot change coverage.
package struct CoverageCollector {
    private enum Key: Hashable {
        case ruleDecided(Int)
        case condition(rule: Int, value: Bool)
        case requirement(type: String, action: String, Requirement, passed: Bool)
    }

    private let policy: CompiledPolicy
    private var items: [CoverageItem] = []
    private var index: [Key: Int] = [:]

    package init(policy: CompiledPolicy) {
        self.policy = policy
        for (i, rule) in policy.rules.enumerated() {
            let label = "\(rule.effect.rawValue) rule \(rule.name)"
            add(.ruleDecided(i), .rule, "\(label) decides", at: rule.location)
            if let condition = rule.condition {
                // A condition folded to a constant has one branch only (the lints report it).
                for value in [true, false] where condition.constantValue ?? value == value {
                    add(.condition(rule: i, value: value), .condition, "\(label): condition \(value)", at: condition.location)
                }
            }
        }
        for typeName in policy.resourceTypeNames {
            guard let type = policy.resourceTypes[typeName] else { continue }
            for actionName in type.actions.keys.sorted() {
                let action = type.actions[actionName]!
                for requirement in Requirement.allCases {
                    guard let location = requirement.statedAt(in: action) else { continue }
                    let label = requirement.label(in: action)
                    for passed in [true, false] where requirement.canEnd(in: action, passed: passed) {
                        add(
                            .requirement(type: typeName, action: actionName, requirement, passed: passed), .requirement,
                            "\(typeName).\(actionName): \(label) \(passed ? "passes" : "fails")", at: location)
                    }
                }
            }
        }
    }

    private mutating func add(_ key: Key, _ kind: CoverageItem.Kind, _ name: String, at location: SourceLocation) {
        guard index[key] == nil else { return }
        index[key] = items.count
        items.append(CoverageItem(kind: kind, name: name, location: location, covered: false))
    }

    private mutating func mark(_ key: Key) {
        if let i = index[key] { items[i].covered = true }
    }

    /// Marks what one explained request exercised.
    package mutating func record(_ request: Request, events: [TraceEvent]) {
        let typeName = request.resource.type
        guard let action = policy.resourceTypes[typeName]?.actions[request.action] else { return }
        for event in events {
            switch event {
            case .rule(let rule, _, let applies):
                if applies { mark(.ruleDecided(rule)) }
                // The branch a rule took as the engine acted on it: an erroring deny condition counts as true.
                if policy.rules[rule].condition != nil { mark(.condition(rule: rule, value: applies)) }
            case .requirement(let outcome, _):
                mark(.requirement(type: typeName, action: action.name, outcome.requirement, passed: outcome.passed))
            case .unknownResourceType, .unknownAction, .action, .subject:
                continue
            }
        }
    }

    package func report() -> CoverageReport {
        CoverageReport(items: items.sorted { a, b in a.location == b.location ? a.name < b.name : a.location < b.location })
    }
}
