import Foundation
import PolicyModel

/// A condition asked only whether it is true, as a consent is (`consent_required` unless it evaluates to `true`),
/// compiled to the conjuncts that read one attribute each, so `decide` evaluates it straight from the request: no
/// `EvaluationInput`, no walk of the node tree, one lookup per attribute.
///
/// CEL's `a && b` is `true` exactly when both sides are `true` (`ConditionNode.junction`: a `false` or an error on
/// either side makes it something else), so the whole condition is `true` exactly when every conjunct is, in any
/// order. Each conjunct kind below is `true` exactly when `ConditionNode.evaluate` of the node it came from is
/// `.bool(true)`; a condition with any other kind of conjunct gets no test and is evaluated as a tree
/// (`ConsentTestTests` checks the two agree).
package struct ConsentTest: Sendable {
    package enum Conjunct: Sendable {
        /// `x.attributes.a` of type bool: present and `true`. Also stands for a `has(x.attributes.a)` beside it, which
        /// its being `true` implies. (Of any other type it is never the boolean `true`: `constant(false)`.)
        case isTrue(AttributeOwner, String)
        /// `has(x.attributes.a)` with no other conjunct on `a`: present and not null.
        case isPresent(AttributeOwner, String)
        /// `x.attributes.a == "text"` (`equal`) or `!= "text"` of type string (`allowed` nil) or an enumeration of
        /// `allowed`: a string (of the enumeration), equal (or not) to the text; any other value is an error, not
        /// `true`. Implies `has(x.attributes.a)` too. (Of any other type it is never a string: `constant(false)`.)
        case string(AttributeOwner, String, equal: Bool, String, allowed: [String]?)
        /// A constant: `true` or not.
        case constant(Bool)
    }

    package let conjuncts: [Conjunct]

    /// The test of `root`, or nil when a conjunct is of another kind.
    package init?(_ root: ConditionNode) {
        var parts: [ConditionNode] = []
        func flatten(_ node: ConditionNode) {
            if case .and(let left, let right) = node {
                flatten(left)
                flatten(right)
            } else {
                parts.append(node)
            }
        }
        flatten(root)
        var conjuncts: [Conjunct] = []
        var presence: [(AttributeOwner, String)] = []
        for part in parts {
            switch part {
            case .attribute(let scope, let name, let type):
                // `ConditionType.convert` gives a boolean only for a bool attribute, and only from a JSON boolean.
                conjuncts.append(type == .bool ? .isTrue(scope, name) : .constant(false))
            case .has(.attribute(let scope, let name)):
                presence.append((scope, name))
            case .compare(let op, let left, let right) where op == .equal || op == .notEqual:
                switch (left, right) {
                case (.attribute(let scope, let name, let type), .constant(.string(let text))),
                    (.constant(.string(let text)), .attribute(let scope, let name, let type)):
                    // `convert` gives a string only for a string or enumeration attribute (of the enumeration's values).
                    switch type {
                    case .string: conjuncts.append(.string(scope, name, equal: op == .equal, text, allowed: nil))
                    case .enumeration(let values): conjuncts.append(.string(scope, name, equal: op == .equal, text, allowed: values))
                    default: conjuncts.append(.constant(false))
                    }
                default:
                    return nil
                }
            case .constant(let value):
                if case .bool(true) = value { conjuncts.append(.constant(true)) } else { conjuncts.append(.constant(false)) }
            default:
                return nil
            }
        }
        // A presence test that another conjunct on the same attribute implies adds nothing.
        for (scope, name) in presence {
            let implied = conjuncts.contains { conjunct in
                switch conjunct {
                case .isTrue(scope, let other), .string(scope, let other, _, _, _): other == name
                default: false
                }
            }
            if !implied { conjuncts.append(.isPresent(scope, name)) }
        }
        self.conjuncts = conjuncts
    }

    /// `ConditionNode.attribute`, from the request itself.
    @inline(__always)
    private static func attribute(_ scope: AttributeOwner, _ name: String, of request: borrowing Request) -> Value? {
        switch scope {
        case .subject: request.subject.attributes.value(forSmall: name)
        case .resource: request.resource.attributes.value(forSmall: name)
        case .context: request.context.attributes.value(forSmall: name)
        }
    }

    /// Whether the condition is `true` for `request`. Out of line: inlined, its loop and switch count against the
    /// optimiser's block limit for the whole of `decide`.
    @inline(never)
    package func holds(_ request: borrowing Request) -> Bool {
        for index in conjuncts.indices {
            switch conjuncts[index] {
            case .isTrue(let scope, let name):
                guard case .bool(true)? = Self.attribute(scope, name, of: request) else { return false }
            case .isPresent(let scope, let name):
                switch Self.attribute(scope, name, of: request) {
                case nil, .null?: return false
                default: break
                }
            case .string(let scope, let name, let equal, let text, let allowed):
                guard case .string(let s)? = Self.attribute(scope, name, of: request), SmallName.equal(s, text) == equal else { return false }
                if let allowed, !allowed.contains(where: { SmallName.equal($0, s) }) { return false }
            case .constant(let value):
                guard value else { return false }
            }
        }
        return true
    }
}
