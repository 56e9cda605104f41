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
struct ConsentTest: Sendable {
    enum Conjunct: Sendable {
        /// `x.attributes.a`: present and, as its declared type, the boolean `true`. Also stands for a
        /// `has(x.attributes.a)` beside it, which its being `true` implies (null never converts).
        case isTrue(AttributeOwner, String, ConditionType)
        /// `has(x.attributes.a)` with no other conjunct on `a`: present and not null.
        case isPresent(AttributeOwner, String)
        /// `x.attributes.a == "text"` (`equal`) or `!= "text"`: as its declared type a string, and equal (or not) to
        /// the text; any other value is an error, not `true`. Implies `has(x.attributes.a)` too.
        case string(AttributeOwner, String, ConditionType, equal: Bool, String)
        /// A constant: `true` or not.
        case constant(Bool)
    }

    let conjuncts: [Conjunct]

    /// The test of `root`, or nil when a conjunct is of another kind.
    init?(_ root: ConditionNode) {
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
                conjuncts.append(.isTrue(scope, name, type))
            case .has(.attribute(let scope, let name)):
                presence.append((scope, name))
            case .compare(let op, let left, let right) where op == .equal || op == .notEqual:
                switch (left, right) {
                case (.attribute(let scope, let name, let type), .constant(.string(let text))),
                    (.constant(.string(let text)), .attribute(let scope, let name, let type)):
                    conjuncts.append(.string(scope, name, type, equal: op == .equal, text))
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
                case .isTrue(scope, let other, _), .string(scope, let other, _, _, _): other == name
                default: false
                }
            }
            if !implied { conjuncts.append(.isPresent(scope, name)) }
        }
        self.conjuncts = conjuncts
    }

    /// Whether the condition is `true` for `request`. Out of line: inlined, its loop and switch count against the
    /// optimiser's block limit for the whole of `decide`.
    @inline(never)
    func holds(_ request: borrowing Request) -> Bool {
        for conjunct in conjuncts {
            switch conjunct {
            case .isTrue(let scope, let name, let type):
                guard let value = ConditionNode.attribute(scope, name, of: request), case .bool(true)? = type.convert(value) else { return false }
            case .isPresent(let scope, let name):
                switch ConditionNode.attribute(scope, name, of: request) {
                case nil, .null?: return false
                default: break
                }
            case .string(let scope, let name, let type, let equal, let text):
                guard let value = ConditionNode.attribute(scope, name, of: request), case .string(let s)? = type.convert(value),
                    SmallName.equal(s, text) == equal
                else { return false }
            case .constant(let value):
                guard value else { return false }
            }
        }
        return true
    }
}
