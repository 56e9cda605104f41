import Foundation
import PolicyModel

/// A request field a condition reads, resolved from its dotted path at compile time.
package enum ConditionField: String, Sendable, Hashable, CaseIterable {
    case subjectId = "subject.id"
    case subjectTier = "subject.tier"
    case subjectSignedIn = "subject.signedIn"
    case subjectRoles = "subject.roles"
    case authMethod = "subject.auth.method"
    case authVerifiedAt = "subject.auth.verifiedAt"
    case subscriptionExpiry = "subject.subscriptionExpiry"
    case resourceType = "resource.type"
    case resourceId = "resource.id"
    case resourceOwnerId = "resource.ownerId"
    case resourceRole = "resource.role"
    case resourceMembers = "resource.members"
    case now = "context.now"

    /// Whether the field can be absent (and so `has()` applies to it).
    package var isOptional: Bool {
        switch self {
        case .subjectId, .authMethod, .authVerifiedAt, .subscriptionExpiry, .resourceId, .resourceOwnerId, .resourceRole: true
        default: false
        }
    }
}

/// Whose `attributes` dictionary an attribute comes from.
package enum AttributeOwner: String, Sendable, Hashable {
    case subject, resource, context
}

package enum ComparisonOperator: String, Sendable, Hashable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

    /// The operator with its operands swapped: `a < b` is `b > a`.
    package var flipped: ComparisonOperator {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        }
    }
}

package enum StringTest: String, Sendable, Hashable {
    case startsWith, endsWith, contains
}

/// What `has()` asks about.
package enum PresenceTest: Sendable, Hashable {
    case field(ConditionField)
    case attribute(AttributeOwner, String)
    case usage(String)
}

/// A compiled condition: paths resolved, types checked, literal lists precomputed, constants folded.
package indirect enum ConditionNode: Sendable, Hashable {
    case constant(ConditionValue)
    case field(ConditionField)
    case attribute(AttributeOwner, String, ConditionType)
    /// `resource.usage.NAME`; a missing counter is 0.
    case usage(String)
    case has(PresenceTest)
    case not(ConditionNode)
    case negate(ConditionNode)
    case and(ConditionNode, ConditionNode)
    case or(ConditionNode, ConditionNode)
    case compare(ComparisonOperator, ConditionNode, ConditionNode)
    case add(ConditionNode, ConditionNode)
    case subtract(ConditionNode, ConditionNode)
    /// `element in container`, where the container is a list or map value.
    case contains(element: ConditionNode, container: ConditionNode)
    /// `element in [a, b]` with items that are not all literals.
    case inItems(ConditionNode, [ConditionNode])
    /// `element in ["x", "y"]`: a literal string list, as a set.
    case inStrings(ConditionNode, Set<String>)
    /// `element in [1, 2.5]`: any other literal list.
    case inValues(ConditionNode, [ConditionValue])
    case index(ConditionNode, ConditionNode)
    case size(ConditionNode)
    case stringTest(StringTest, ConditionNode, ConditionNode)
    /// A list literal with items that are not all literals, used as a value.
    case list([ConditionNode])

    /// CEL's `&&` (decided by `false`) and `||` (decided by `true`): the deciding value on either side wins over an
    /// error on the other; otherwise both sides must be the other boolean, and an error is the result. Returns a new
    /// constant rather than a side's value (returning the value cost a copy: 4 more instructions per decision).
    @inline(__always)
    private static func junction(
        _ left: ConditionNode, _ right: ConditionNode, decidedBy decisive: Bool, _ input: borrowing EvaluationInput
    ) -> ConditionValue? {
        let l = left.evaluate(input)
        if case .bool(decisive)? = l { return .bool(decisive) }
        let r = right.evaluate(input)
        if case .bool(decisive)? = r { return .bool(decisive) }
        // Neither side decided: both are the other boolean, or an error.
        guard case .bool? = l, case .bool? = r else { return nil }
        return .bool(!decisive)
    }

    /// The value, or nil for an evaluation error (absent value, type mismatch, overflow, missing key).
    package func evaluate(_ input: borrowing EvaluationInput) -> ConditionValue? {
        switch self {
        case .constant(let value):
            return value
        case .field(let field):
            return Self.read(field, input)
        case .attribute(let scope, let name, let type):
            guard let value = Self.attribute(scope, name, input) else { return nil }
            return type.convert(value)
        case .usage(let name):
            return .int(input.request.resource.usage.value(forSmall: name) ?? 0)
        case .has(let test):
            return .bool(Self.isPresent(test, input))
        case .not(let operand):
            guard case .bool(let b)? = operand.evaluate(input) else { return nil }
            return .bool(!b)
        case .negate(let operand):
            switch operand.evaluate(input) {
            case .int(let i)?: return i == .min ? nil : .int(-i)
            case .double(let d)?: return .double(-d)
            case .duration(let d)?: return .duration(-d)
            default: return nil
            }
        case .and(let left, let right):
            // `has(x.attributes.a) && x.attributes.a` (a consent's usual shape): one lookup instead of two, with the
            // junction's outcome spelled out (absent: false; present: the right side's value, an error unless a bool).
            if case .has(.attribute(let scope, let name)) = left, case .attribute(scope, let same, let type) = right, SmallName.equal(name, same) {
                switch Self.attribute(scope, name, input) {
                case nil, .null?: return .bool(false)
                case let value?:
                    guard case .bool(let b)? = type.convert(value) else { return nil }
                    return .bool(b)
                }
            }
            return Self.junction(left, right, decidedBy: false, input)
        case .or(let left, let right):
            return Self.junction(left, right, decidedBy: true, input)
        case .compare(let op, let left, let right):
            guard let l = left.evaluate(input), let r = right.evaluate(input) else { return nil }
            return ConditionValue.compare(op, l, r).map { .bool($0) }
        case .add(let left, let right):
            guard let l = left.evaluate(input), let r = right.evaluate(input) else { return nil }
            return ConditionValue.add(l, r)
        case .subtract(let left, let right):
            guard let l = left.evaluate(input), let r = right.evaluate(input) else { return nil }
            return ConditionValue.subtract(l, r)
        case .contains(let element, let container):
            guard let e = element.evaluate(input), let c = container.evaluate(input) else { return nil }
            return ConditionValue.contains(c, e).map { .bool($0) }
        case .inItems(let element, let items):
            // As in CEL, a list literal with an item in error is an error, even if another item matches.
            guard let e = element.evaluate(input) else { return nil }
            var found = false
            for item in items {
                guard let v = item.evaluate(input), let equal = ConditionValue.equal(e, v) else { return nil }
                found = found || equal
            }
            return .bool(found)
        case .inStrings(let element, let set):
            guard case .string(let s)? = element.evaluate(input) else { return nil }
            return .bool(set.contains(s))
        case .inValues(let element, let values):
            guard let e = element.evaluate(input) else { return nil }
            for v in values {
                guard let equal = ConditionValue.equal(e, v) else { return nil }
                if equal { return .bool(true) }
            }
            return .bool(false)
        case .index(let base, let key):
            switch (base.evaluate(input), key.evaluate(input)) {
            case (.map(let m)?, .string(let k)?): return m[k].map { .string($0) }
            case (.list(let l)?, .int(let i)?): return l.element(at: i)
            default: return nil
            }
        case .size(let operand):
            switch operand.evaluate(input) {
            case .string(let s)?: return .int(s.unicodeScalars.count)
            case .list(let l)?: return .int(l.count)
            case .map(let m)?: return .int(m.count)
            default: return nil
            }
        case .stringTest(let test, let receiver, let argument):
            guard case .string(let s)? = receiver.evaluate(input), case .string(let a)? = argument.evaluate(input) else { return nil }
            return .bool(ConditionValue.test(test, s, a))
        case .list(let items):
            var values: [ConditionValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard let v = item.evaluate(input) else { return nil }
                values.append(v)
            }
            return .list(.items(values))
        }
    }

    static func read(_ field: ConditionField, _ input: borrowing EvaluationInput) -> ConditionValue? {
        switch field {
        case .subjectId: input.request.subject.id.map { .string($0) }
        case .subjectTier: .string(input.effectiveTier)
        case .subjectSignedIn: .bool(input.signedIn)
        case .subjectRoles: .list(.strings(input.request.subject.roles))
        case .authMethod: input.request.subject.auth.map { .string($0.method) }
        case .authVerifiedAt: input.request.subject.auth?.verifiedAt.map { .timestamp($0.timeIntervalSince1970) }
        case .subscriptionExpiry: input.request.subject.subscriptionExpiry.map { .timestamp($0.timeIntervalSince1970) }
        case .resourceType: .string(input.request.resource.type)
        case .resourceId: input.request.resource.id.map { .string($0) }
        case .resourceOwnerId: input.request.resource.ownerId.map { .string($0) }
        case .resourceRole: input.resourceRole.map { .string($0) }
        case .resourceMembers: .map(input.request.resource.members)
        case .now: .timestamp(input.now.timeIntervalSince1970)
        }
    }

    static func isPresent(_ test: PresenceTest, _ input: borrowing EvaluationInput) -> Bool {
        switch test {
        case .field(let field):
            return read(field, input) != nil
        case .attribute(let scope, let name):
            switch attribute(scope, name, input) {
            case nil, .null?: return false
            default: return true
            }
        case .usage(let name):
            return input.request.resource.usage.value(forSmall: name) != nil
        }
    }

    /// The request's attribute `name` of `scope`: a few small settings are scanned by their words, not hashed.
    @inline(__always)
    static func attribute(_ scope: AttributeOwner, _ name: String, _ input: borrowing EvaluationInput) -> Value? {
        // Read through `input.request` in place: handing `input.request` to a function taking a `Request` copied the
        // whole request (its value witness, a retain of each of its strings and collections) on every read.
        switch scope {
        case .subject: input.request.subject.attributes.value(forSmall: name)
        case .resource: input.request.resource.attributes.value(forSmall: name)
        case .context: input.request.context.attributes.value(forSmall: name)
        }
    }

    /// Whether evaluating the node may read `field` (directly or through `has()`).
    package func reads(_ field: ConditionField) -> Bool {
        switch self {
        case .constant, .attribute, .usage: false
        case .field(let read): read == field
        case .has(let test): test == .field(field)
        case .not(let a), .negate(let a), .size(let a): a.reads(field)
        case .and(let a, let b), .or(let a, let b), .compare(_, let a, let b), .add(let a, let b), .subtract(let a, let b),
            .contains(let a, let b), .index(let a, let b), .stringTest(_, let a, let b):
            a.reads(field) || b.reads(field)
        case .inItems(let a, let items): a.reads(field) || items.contains { $0.reads(field) }
        case .inStrings(let a, _), .inValues(let a, _): a.reads(field)
        case .list(let items): items.contains { $0.reads(field) }
        }
    }

    /// Whether the node reads nothing from the request, so it can be evaluated at compile time.
    package var isConstant: Bool {
        if case .constant = self { return true }
        return false
    }
}

extension ConditionValue {
    /// `==` between two values; nil when they cannot be compared (different kinds).
    package static func equal(_ a: ConditionValue, _ b: ConditionValue) -> Bool? {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.int(let x), .double(let y)): return Double(x) == y
        case (.double(let x), .int(let y)): return x == Double(y)
        case (.string(let x), .string(let y)): return SmallName.equal(x, y)
        case (.timestamp(let x), .timestamp(let y)): return x == y
        case (.duration(let x), .duration(let y)): return x == y
        case (.map(let x), .map(let y)): return x == y
        case (.list(let x), .list(let y)):
            guard x.count == y.count else { return false }
            for i in 0..<x.count {
                guard let p = x.element(at: i), let q = y.element(at: i), let same = equal(p, q) else { return nil }
                if !same { return false }
            }
            return true
        default: return nil
        }
    }

    package static func compare(_ op: ComparisonOperator, _ a: ConditionValue, _ b: ConditionValue) -> Bool? {
        switch op {
        case .equal: return equal(a, b)
        case .notEqual: return equal(a, b).map { !$0 }
        default: break
        }
        switch (a, b) {
        case (.int(let x), .int(let y)): return order(op, x, y)
        case (.double(let x), .double(let y)): return order(op, x, y)
        case (.int(let x), .double(let y)): return order(op, Double(x), y)
        case (.double(let x), .int(let y)): return order(op, x, Double(y))
        case (.string(let x), .string(let y)): return order(op, x, y)
        case (.timestamp(let x), .timestamp(let y)): return order(op, x, y)
        case (.duration(let x), .duration(let y)): return order(op, x, y)
        default: return nil
        }
    }

    @inline(__always)
    static func order<T: Comparable>(_ op: ComparisonOperator, _ x: T, _ y: T) -> Bool {
        switch op {
        case .less: x < y
        case .lessOrEqual: x <= y
        case .greater: x > y
        case .greaterOrEqual: x >= y
        case .equal: x == y
        case .notEqual: x != y
        }
    }

    /// `a + b`; nil on overflow or a non-finite result.
    package static func add(_ a: ConditionValue, _ b: ConditionValue) -> ConditionValue? {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? nil : .int(sum)
        case (.double(let x), .double(let y)): return finite(.double(x + y), x + y)
        case (.int(let x), .double(let y)): return finite(.double(Double(x) + y), Double(x) + y)
        case (.double(let x), .int(let y)): return finite(.double(x + Double(y)), x + Double(y))
        case (.timestamp(let t), .duration(let d)), (.duration(let d), .timestamp(let t)): return finite(.timestamp(t + d), t + d)
        case (.duration(let x), .duration(let y)): return finite(.duration(x + y), x + y)
        default: return nil
        }
    }

    /// `a - b`; nil on overflow or a non-finite result.
    package static func subtract(_ a: ConditionValue, _ b: ConditionValue) -> ConditionValue? {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            let (difference, overflow) = x.subtractingReportingOverflow(y)
            return overflow ? nil : .int(difference)
        case (.double(let x), .double(let y)): return finite(.double(x - y), x - y)
        case (.int(let x), .double(let y)): return finite(.double(Double(x) - y), Double(x) - y)
        case (.double(let x), .int(let y)): return finite(.double(x - Double(y)), x - Double(y))
        case (.timestamp(let x), .timestamp(let y)): return finite(.duration(x - y), x - y)
        case (.timestamp(let t), .duration(let d)): return finite(.timestamp(t - d), t - d)
        case (.duration(let x), .duration(let y)): return finite(.duration(x - y), x - y)
        default: return nil
        }
    }

    @inline(__always)
    static func finite(_ value: ConditionValue, _ raw: Double) -> ConditionValue? { raw.isFinite ? value : nil }

    /// `element in container` for a list or a map (by key); nil on an error.
    package static func contains(_ container: ConditionValue, _ element: ConditionValue) -> Bool? {
        switch (container, element) {
        case (.map(let m), .string(let key)):
            return m[key] != nil
        case (.list(.strings(let strings)), .string(let s)):
            return strings.contains(s)
        case (.list(let list), _):
            for i in 0..<list.count {
                guard let item = list.element(at: i), let same = equal(element, item) else { return nil }
                if same { return true }
            }
            return false
        default:
            return nil
        }
    }

    /// `startsWith`, `endsWith`, `contains`, comparing Unicode scalars exactly (no normalisation).
    package static func test(_ test: StringTest, _ s: String, _ a: String) -> Bool {
        switch test {
        case .startsWith: return s.utf8.starts(with: a.utf8)
        case .endsWith: return s.utf8.reversed().starts(with: a.utf8.reversed())
        case .contains:
            if a.isEmpty { return true }
            var start = s.utf8.startIndex
            while start != s.utf8.endIndex {
                if s.utf8[start...].starts(with: a.utf8) { return true }
                start = s.utf8.index(after: start)
            }
            return false
        }
    }
}
