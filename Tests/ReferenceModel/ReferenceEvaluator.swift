import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax

/// A deliberately plain evaluator over the syntax tree: paths by string, values by dynamic kind, nothing precomputed.
package struct ReferenceEvaluator {
    indirect enum V: Equatable {
        case null, bool(Bool), int(Int), double(Double), string(String), timestamp(Double), duration(Double), list([V]), map([String: String])
    }

    let input: EvaluationInput
    let schema: ExpressionSchema

    package init(input: EvaluationInput, schema: ExpressionSchema) {
        self.input = input
        self.schema = schema
    }

    /// true, false, or nil when evaluating `e` hits an error.
    package func evaluate(_ e: Expr) -> Bool? {
        if case .bool(let b)? = value(e) { return b }
        return nil
    }

    func value(_ e: Expr) -> V? {
        switch e {
        case .literal(let l, _):
            switch l {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            }
        case .list(let items, _):
            var out: [V] = []
            for item in items {
                guard let v = value(item) else { return nil }
                out.append(v)
            }
            return .list(out)
        case .identifier, .member:
            return read(e.dottedPath ?? "")
        case .index(let b, let k, _):
            switch (value(b), value(k)) {
            case (.map(let m)?, .string(let key)?): return m[key].map { .string($0) }
            case (.list(let l)?, .int(let i)?): return i >= 0 && i < l.count ? l[i] : nil
            default: return nil
            }
        case .call(nil, "has", _, let args, _):
            return .bool(isPresent(args[0].dottedPath ?? ""))
        case .call(nil, "duration", _, let args, _):
            guard case .literal(.string(let s), _) = args[0] else { return nil }
            return DurationText.seconds(s).map { .duration($0) }
        case .call(nil, "timestamp", _, let args, _):
            guard case .literal(.string(let s), _) = args[0] else { return nil }
            return Timestamp.parse(s).map { .timestamp($0.timeIntervalSince1970) }
        case .call(let receiver, let name, _, let args, _):
            let subject = receiver ?? args[0]
            guard let v = value(subject) else { return nil }
            if name == "size" {
                switch v {
                case .string(let s): return .int(Array(s.unicodeScalars).count)
                case .list(let l): return .int(l.count)
                case .map(let m): return .int(m.count)
                default: return nil
                }
            }
            guard case .string(let s) = v, case .string(let a)? = value(args[0]) else { return nil }
            let x = Array(s.unicodeScalars), y = Array(a.unicodeScalars)
            switch name {
            case "startsWith": return .bool(x.count >= y.count && Array(x[0..<y.count]) == y)
            case "endsWith": return .bool(x.count >= y.count && Array(x[(x.count - y.count)...]) == y)
            default:
                if y.isEmpty { return .bool(true) }
                if y.count > x.count { return .bool(false) }
                for start in 0...(x.count - y.count) where Array(x[start..<start + y.count]) == y { return .bool(true) }
                return .bool(false)
            }
        case .unary(.not, let x, _):
            guard case .bool(let b)? = value(x) else { return nil }
            return .bool(!b)
        case .unary(.negate, let x, _):
            switch value(x) {
            case .int(let i)?: return i == Int.min ? nil : .int(-i)
            case .double(let d)?: return .double(-d)
            case .duration(let d)?: return .duration(-d)
            default: return nil
            }
        case .binary(let op, let a, let b, _, _):
            let l = value(a), r = value(b)
            switch op {
            case .and:
                if l == .bool(false) || r == .bool(false) { return .bool(false) }
                return l == .bool(true) && r == .bool(true) ? .bool(true) : nil
            case .or:
                if l == .bool(true) || r == .bool(true) { return .bool(true) }
                return l == .bool(false) && r == .bool(false) ? .bool(false) : nil
            default: break
            }
            guard let l, let r else { return nil }
            switch op {
            case .equal: return equal(l, r).map { .bool($0) }
            case .notEqual: return equal(l, r).map { .bool(!$0) }
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                guard let (x, y) = ordered(l, r) else { return nil }
                switch op {
                case .less: return .bool(x < y)
                case .lessOrEqual: return .bool(x <= y)
                case .greater: return .bool(x > y)
                default: return .bool(x >= y)
                }
            case .in:
                switch (l, r) {
                case (.string(let k), .map(let m)): return .bool(m[k] != nil)
                case (_, .list(let items)):
                    var found = false
                    for item in items {
                        guard let same = equal(l, item) else { return nil }
                        found = found || same
                    }
                    return .bool(found)
                default: return nil
                }
            case .add, .subtract:
                return arithmetic(op == .add, l, r)
            default: return nil
            }
        }
    }

    /// Comparable keys for ordering: numbers as doubles, strings, instants and spans.
    enum Key: Comparable {
        case number(Double), text(String)
    }

    func ordered(_ l: V, _ r: V) -> (Key, Key)? {
        switch (l, r) {
        case (.int(let x), .int(let y)): return x == y ? (.number(0), .number(0)) : (x < y ? (.number(0), .number(1)) : (.number(1), .number(0)))
        case (.int(let x), .double(let y)): return (.number(Double(x)), .number(y))
        case (.double(let x), .int(let y)): return (.number(x), .number(Double(y)))
        case (.double(let x), .double(let y)), (.timestamp(let x), .timestamp(let y)), (.duration(let x), .duration(let y)):
            return (.number(x), .number(y))
        case (.string(let x), .string(let y)): return (.text(x), .text(y))
        default: return nil
        }
    }

    func equal(_ l: V, _ r: V) -> Bool? {
        switch (l, r) {
        case (.int(let x), .double(let y)): return Double(x) == y
        case (.double(let x), .int(let y)): return x == Double(y)
        case (.list(let x), .list(let y)):
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) {
                guard let same = equal(p, q) else { return nil }
                if !same { return false }
            }
            return true
        case (.null, .null), (.bool, .bool), (.int, .int), (.double, .double), (.string, .string), (.timestamp, .timestamp),
            (.duration, .duration), (.map, .map):
            return l == r
        default: return nil
        }
    }

    func arithmetic(_ add: Bool, _ l: V, _ r: V) -> V? {
        func finite(_ d: Double, _ make: (Double) -> V) -> V? { d.isFinite ? make(d) : nil }
        switch (l, r) {
        case (.int(let x), .int(let y)):
            let (v, o) = add ? x.addingReportingOverflow(y) : x.subtractingReportingOverflow(y)
            return o ? nil : .int(v)
        case (.int(let x), .double(let y)): return finite(add ? Double(x) + y : Double(x) - y) { .double($0) }
        case (.double(let x), .int(let y)): return finite(add ? x + Double(y) : x - Double(y)) { .double($0) }
        case (.double(let x), .double(let y)): return finite(add ? x + y : x - y) { .double($0) }
        case (.timestamp(let t), .duration(let d)): return finite(add ? t + d : t - d) { .timestamp($0) }
        case (.duration(let d), .timestamp(let t)) where add: return finite(t + d) { .timestamp($0) }
        case (.duration(let x), .duration(let y)): return finite(add ? x + y : x - y) { .duration($0) }
        case (.timestamp(let x), .timestamp(let y)) where !add: return finite(x - y) { .duration($0) }
        default: return nil
        }
    }

    func read(_ path: String) -> V? {
        let r = input.request
        switch path {
        case "subject.id": return r.subject.id.map { .string($0) }
        case "subject.tier": return .string(input.effectiveTier)
        case "subject.signedIn": return .bool(input.signedIn)
        case "subject.roles": return .list(r.subject.roles.map { .string($0) })
        case "subject.auth.method": return r.subject.auth.map { .string($0.method) }
        case "subject.auth.verifiedAt": return r.subject.auth?.verifiedAt.map { .timestamp($0.timeIntervalSince1970) }
        case "subject.subscriptionExpiry": return r.subject.subscriptionExpiry.map { .timestamp($0.timeIntervalSince1970) }
        case "resource.type": return .string(r.resource.type)
        case "resource.id": return r.resource.id.map { .string($0) }
        case "resource.ownerId": return r.resource.ownerId.map { .string($0) }
        case "resource.role": return input.resourceRole.map { .string($0) }
        case "resource.members": return .map(r.resource.members)
        case "context.now": return .timestamp(input.now.timeIntervalSince1970)
        default: break
        }
        let parts = path.split(separator: ".").map(String.init)
        if parts.count == 3, parts[0] == "resource", parts[1] == "usage" { return .int(r.resource.usage[parts[2]] ?? 0) }
        guard parts.count == 3, parts[1] == "attributes" else { return nil }
        let (values, types): ([String: Value], [String: AttributeType]) = switch parts[0] {
        case "subject": (r.subject.attributes, schema.subjectAttributes)
        case "resource": (r.resource.attributes, schema.resourceAttributes)
        default: (r.context.attributes, schema.contextAttributes)
        }
        guard let v = values[parts[2]], let t = types[parts[2]] else { return nil }
        return decode(v, t)
    }

    func decode(_ v: Value, _ t: AttributeType) -> V? {
        switch (t, v) {
        case (.bool, .bool(let b)): return .bool(b)
        case (.int, .int(let i)): return .int(i)
        case (.int, .double(let d)): return d == d.rounded() && abs(d) < 9e18 ? .int(Int(d)) : nil
        case (.double, .double(let d)): return .double(d)
        case (.double, .int(let i)): return .double(Double(i))
        case (.string, .string(let s)): return .string(s)
        case (.enumeration(let allowed), .string(let s)): return allowed.contains(s) ? .string(s) : nil
        case (.timestamp, .string(let s)): return Timestamp.parse(s).map { .timestamp($0.timeIntervalSince1970) }
        case (.duration, .string(let s)): return DurationText.seconds(s).map { .duration($0) }
        case (.duration, .int(let i)): return .duration(Double(i))
        case (.duration, .double(let d)): return d.isFinite ? .duration(d) : nil
        case (.list(let e), .list(let items)):
            var out: [V] = []
            for item in items {
                guard let d = decode(item, e) else { return nil }
                out.append(d)
            }
            return .list(out)
        default: return nil
        }
    }

    func isPresent(_ path: String) -> Bool {
        let parts = path.split(separator: ".").map(String.init)
        if parts.count == 3, parts[1] == "attributes" {
            let values = parts[0] == "subject" ? input.request.subject.attributes
                : parts[0] == "resource" ? input.request.resource.attributes : input.request.context.attributes
            if let v = values[parts[2]], v != .null { return true }
            return false
        }
        if parts.count == 3, parts[1] == "usage" { return input.request.resource.usage[parts[2]] != nil }
        return read(path) != nil
    }
}
