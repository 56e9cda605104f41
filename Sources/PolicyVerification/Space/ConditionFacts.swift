import Foundation
import PolicyEngine
import PolicyModel

/// A request value a condition reads, as the request space varies it.
enum SpaceSource: Hashable {
    case field(ConditionField)
    case attribute(AttributeOwner, String)
    case usage(String)

    /// The dotted path a condition writes it as: `subject.tier`, `resource.attributes.amount`, `resource.usage.sources`.
    var path: String {
        switch self {
        case .field(let field): field.rawValue
        case .attribute(let owner, let name): "\(owner.rawValue).attributes.\(name)"
        case .usage(let name): "resource.usage.\(name)"
        }
    }
}

extension CompiledPolicy {
    /// Every condition of the policy: each rule's, in source order, then each action's requirements' (its consent),
    /// by type and action.
    var conditions: [CompiledCondition] {
        var conditions = rules.compactMap(\.condition)
        for typeName in resourceTypeNames {
            guard let type = resourceTypes[typeName] else { continue }
            for actionName in type.actions.keys.sorted() {
                guard let action = type.actions[actionName] else { continue }
                for requirement in Requirement.allCases { conditions += requirement.conditions(in: action) }
            }
        }
        return conditions
    }
}

/// A point in time a timestamp value is tried at: fixed, or relative to the request's `now`.
enum TimeCandidate: Hashable, Comparable {
    /// Seconds before `now` (negative: after).
    case ago(Double)
    case at(Double)

    func date(now: Date) -> Date {
        switch self {
        case .ago(let seconds): now.addingTimeInterval(-seconds)
        case .at(let seconds): Date(timeIntervalSince1970: seconds)
        }
    }
}

/// What the conditions of one (resource type, action) read and compare, gathered by walking their
/// compiled trees: the values each source is compared with are where its truth values can change, so
/// the space tries each of them and its neighbours.
///
/// A construct whose truth cannot be pinned to such boundaries (string functions, `size`, arithmetic on
/// two request values, indexing) is recorded in `gaps`; the space still samples it, but says it is not a proof.
struct ConditionFacts {
    var reads: Set<SpaceSource> = []
    /// Literal values each source is compared with (`==`, `<`, `in` ...).
    var literals: [SpaceSource: Set<ConditionValue>] = [:]
    /// Durations a timestamp source is compared with relative to `now` (`now - source <= d`, `source > now - d`).
    var relative: [SpaceSource: Set<Double>] = [:]
    /// Strings looked up in a list attribute (`"x" in resource.attributes.tags`).
    var listLiterals: [SpaceSource: Set<String>] = [:]
    var attributeTypes: [SpaceSource: ConditionType] = [:]
    /// App roles looked up in `subject.roles`.
    var appRoles: Set<String> = []
    /// Auth methods compared with `subject.auth.method`.
    var authMethods: Set<String> = []
    /// Sources tested with `has()`.
    var presence: Set<SpaceSource> = []
    /// Constructs that make the space a sample rather than a proof, with where they are.
    var gaps: [(construct: String, location: SourceLocation?)] = []

    init() {}

    /// What one condition reads and compares.
    init(_ condition: CompiledCondition) {
        add(condition)
    }

    /// What every condition of a policy (rules and consents) reads and compares.
    init(conditionsOf policy: CompiledPolicy) {
        for condition in policy.conditions { add(condition) }
    }

    mutating func add(_ condition: CompiledCondition) {
        walk(condition.root, at: condition.location)
    }

    /// The string literals `source` is compared with or looked up by (`==`, `in`, `"x" in source`).
    func strings(comparedWith source: SpaceSource) -> Set<String> {
        var strings = listLiterals[source] ?? []
        for case .string(let s) in literals[source] ?? [] { strings.insert(s) }
        if source == .field(.subjectRoles) { strings.formUnion(appRoles) }
        if source == .field(.authMethod) { strings.formUnion(authMethods) }
        return strings
    }

    /// Whether `source` is compared with any literal at all, so its truth changes only at known values.
    func isCompared(_ source: SpaceSource) -> Bool {
        literals[source] != nil || relative[source] != nil || listLiterals[source] != nil
            || (source == .field(.subjectRoles) && !appRoles.isEmpty) || (source == .field(.authMethod) && !authMethods.isEmpty)
    }

    /// Whether the subject's standing on the resource (owner, member role) matters to a condition.
    var readsStanding: Bool {
        !reads.isDisjoint(with: [.field(.resourceRole), .field(.resourceMembers), .field(.resourceOwnerId), .field(.subjectId)])
    }

    var readsAuth: Bool { !reads.isDisjoint(with: [.field(.authMethod), .field(.authVerifiedAt)]) }

    private mutating func walk(_ node: ConditionNode, at location: SourceLocation) {
        switch node {
        case .constant:
            return
        case .field, .attribute, .usage:
            if let source = source(node) { reads.insert(source) }
            if case .attribute(let owner, let name, let type) = node { attributeTypes[.attribute(owner, name)] = type }
        case .has(let test):
            let source: SpaceSource
            switch test {
            case .field(let field): source = .field(field)
            case .attribute(let owner, let name): source = .attribute(owner, name)
            case .usage(let name): source = .usage(name)
            }
            reads.insert(source)
            presence.insert(source)
        case .not(let operand):
            walk(operand, at: location)
        case .and(let l, let r), .or(let l, let r):
            walk(l, at: location)
            walk(r, at: location)
        case .compare(_, let l, let r):
            comparison(l, r, at: location)
        case .contains(let element, let container):
            containment(element, container, at: location)
        case .inStrings(let element, let strings):
            walk(element, at: location)
            if let source = source(element) {
                record(source, strings.map { ConditionValue.string($0) }, at: location)
            } else if !isStanding(element) {
                gap("'in' on a computed value", at: location)
            }
        case .inValues(let element, let values):
            walk(element, at: location)
            if let source = source(element) { record(source, values, at: location) } else { gap("'in' on a computed value", at: location) }
        case .inItems(let element, let items):
            walk(element, at: location)
            for item in items { walk(item, at: location) }
            gap("'in' a list of request values", at: location)
        case .index(let base, let key):
            walk(base, at: location)
            walk(key, at: location)
            if !isStanding(node) { gap("indexing", at: location) }
        case .size(let operand):
            walk(operand, at: location)
            gap("size()", at: location)
        case .stringTest(let test, let receiver, let argument):
            walk(receiver, at: location)
            walk(argument, at: location)
            if let source = source(receiver), case .constant(let literal) = argument, case .string(let s) = literal {
                // Try the literal itself and a value around it; combinations of several tests are not covered.
                record(source, [.string(s), .string("x" + s + "x")], at: location)
            }
            gap("\(test.rawValue)()", at: location)
        case .negate(let operand):
            walk(operand, at: location)
            if source(operand) != nil { gap("negating a request value", at: location) }
        case .add(let l, let r), .subtract(let l, let r):
            walk(l, at: location)
            walk(r, at: location)
            gap("arithmetic outside a comparison", at: location)
        case .list(let items):
            for item in items { walk(item, at: location) }
            gap("a list of request values", at: location)
        }
    }

    /// `a op b`: a source against a literal (possibly shifted by a constant), a timestamp against `now ± d`,
    /// `now - t` against a duration, or the subject's id against the owner's.
    private mutating func comparison(_ l: ConditionNode, _ r: ConditionNode, at location: SourceLocation) {
        if let (source, literals) = shiftedLiteral(l, r) ?? shiftedLiteral(r, l) {
            readLeaves(l)
            readLeaves(r)
            record(source, literals, at: location)
            return
        }
        if let (source, seconds) = relativeToNow(l, r) ?? relativeToNow(r, l) {
            readLeaves(l)
            readLeaves(r)
            relative[source, default: []].formUnion(seconds)
            return
        }
        walk(l, at: location)
        walk(r, at: location)
        if isStanding(l), isStanding(r) { return }
        if isStanding(l) || isStanding(r), case .constant = (isStanding(l) ? r : l) { return }
        if case .constant = l { return }
        if case .constant = r { return }
        gap("a comparison of two request values", at: location)
    }

    /// Records what a recognised comparison reads, without judging its arithmetic.
    private mutating func readLeaves(_ node: ConditionNode) {
        switch node {
        case .field, .attribute, .usage:
            if let source = source(node) { reads.insert(source) }
            if case .attribute(let owner, let name, let type) = node { attributeTypes[.attribute(owner, name)] = type }
        case .add(let a, let b), .subtract(let a, let b):
            readLeaves(a)
            readLeaves(b)
        default:
            return
        }
    }

    /// `source op literal` or `source ± k op literal`: the literals the source's truth changes at.
    private func shiftedLiteral(_ side: ConditionNode, _ other: ConditionNode) -> (SpaceSource, [ConditionValue])? {
        guard case .constant(let literal) = other else { return nil }
        if let source = source(side) { return (source, [literal]) }
        switch side {
        case .add(let a, .constant(let k)), .add(.constant(let k), let a):
            guard let source = source(a), let shifted = subtract(literal, k) else { return nil }
            return (source, [shifted])
        case .subtract(let a, .constant(let k)):
            guard let source = source(a), let shifted = add(literal, k) else { return nil }
            return (source, [shifted])
        default:
            return nil
        }
    }

    /// `now - t op d`, `t - now op d`, `t op now ± d`: the durations at which `t`'s age changes the answer.
    private func relativeToNow(_ side: ConditionNode, _ other: ConditionNode) -> (SpaceSource, [Double])? {
        switch (side, other) {
        case (.subtract(.field(.now), let t), .constant(.duration(let d))):
            return source(t).map { ($0, [d]) }
        case (.subtract(let t, .field(.now)), .constant(.duration(let d))):
            return source(t).map { ($0, [-d]) }
        case (let t, .add(.field(.now), .constant(.duration(let d)))), (let t, .add(.constant(.duration(let d)), .field(.now))):
            return source(t).map { ($0, [-d]) }
        case (let t, .subtract(.field(.now), .constant(.duration(let d)))):
            return source(t).map { ($0, [d]) }
        case (let t, .field(.now)):
            guard let s = source(t), s != SpaceSource.field(.now) else { return nil }
            return (s, [0])
        default:
            return nil
        }
    }

    private mutating func containment(_ element: ConditionNode, _ container: ConditionNode, at location: SourceLocation) {
        walk(element, at: location)
        walk(container, at: location)
        switch (element, container) {
        case (.constant(.string(let role)), .field(.subjectRoles)):
            appRoles.insert(role)
        case (.constant(.string(let s)), .attribute(let owner, let name, _)):
            listLiterals[.attribute(owner, name), default: []].insert(s)
        case (.field(.subjectId), .field(.resourceMembers)):
            return
        case (_, .constant(.list(let list))):
            if let source = source(element) {
                record(source, (0..<list.count).compactMap { list.element(at: $0) }, at: location)
            } else {
                gap("'in' on a computed value", at: location)
            }
        default:
            gap("'in' on request values", at: location)
        }
    }

    private mutating func record(_ source: SpaceSource, _ values: [ConditionValue], at location: SourceLocation) {
        switch source {
        case .field(.subjectId), .field(.resourceOwnerId):
            gap("comparing an id with a literal", at: location)
        case .field(.subjectRoles):
            for case .string(let role) in values { appRoles.insert(role) }
        case .field(.authMethod):
            for case .string(let method) in values { authMethods.insert(method) }
        default:
            literals[source, default: []].formUnion(values)
        }
    }

    private mutating func gap(_ construct: String, at location: SourceLocation?) {
        if !gaps.contains(where: { $0.construct == construct && $0.location == location }) { gaps.append((construct, location)) }
    }

    private func source(_ node: ConditionNode) -> SpaceSource? {
        switch node {
        case .field(let field): return .field(field)
        case .attribute(let owner, let name, _): return .attribute(owner, name)
        case .usage(let name): return .usage(name)
        case .index(.field(.resourceMembers), .field(.subjectId)): return .field(.resourceRole)
        default: return nil
        }
    }

    /// Values the subject's standing decides: its id, the owner's id, its role, `resource.members[subject.id]`.
    private func isStanding(_ node: ConditionNode) -> Bool {
        switch node {
        case .field(.subjectId), .field(.resourceOwnerId), .field(.resourceRole), .field(.resourceMembers): true
        case .index(.field(.resourceMembers), .field(.subjectId)): true
        default: false
        }
    }

    private func add(_ a: ConditionValue, _ b: ConditionValue) -> ConditionValue? {
        switch (a, b) {
        case (.int(let x), .int(let y)): let (r, o) = x.addingReportingOverflow(y); return o ? nil : .int(r)
        case (.double(let x), .double(let y)): return .double(x + y)
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return .double(Double(x) + y)
        case (.timestamp(let t), .duration(let d)), (.duration(let d), .timestamp(let t)): return .timestamp(t + d)
        case (.duration(let x), .duration(let y)): return .duration(x + y)
        default: return nil
        }
    }

    private func subtract(_ a: ConditionValue, _ b: ConditionValue) -> ConditionValue? {
        switch b {
        case .int(let y): return y == .min ? nil : add(a, .int(-y))
        case .double(let y): return add(a, .double(-y))
        case .duration(let y): return add(a, .duration(-y))
        default: return nil
        }
    }
}
