import Foundation
import PolicyModel

/// A condition of a rule, checked and compiled: evaluating it parses nothing and looks up no fixed path by name.
package struct CompiledCondition: Sendable {
    /// The original text, for explain traces.
    package let source: String
    package let location: SourceLocation
    package let root: ConditionNode
    /// Every (path, literal) comparison in the condition; an invariant prover picks boundary values from them.
    package let comparedLiterals: [ComparedLiteral]
    /// Every path the condition reads, in order of first appearance.
    package let readPaths: [String]

    package init(source: String, location: SourceLocation, root: ConditionNode, comparedLiterals: [ComparedLiteral], readPaths: [String]) {
        self.source = source
        self.location = location
        self.root = root
        self.comparedLiterals = comparedLiterals
        self.readPaths = readPaths
    }

    /// true/false, or nil when evaluation hit an error (absent value, runtime type mismatch, overflow).
    @inlinable
    package func evaluate(_ input: borrowing EvaluationInput) -> Bool? {
        if case .bool(let b)? = root.evaluate(input) { return b }
        return nil
    }

    /// nil unless the condition folds to a constant at compile time (lint uses it).
    package var constantValue: Bool? {
        if case .constant(.bool(let b)) = root { return b }
        return nil
    }
}

/// One comparison of a path with a literal, e.g. `resource.attributes.amount < 500`, with the path on the left.
package struct ComparedLiteral: Sendable, Hashable, CustomStringConvertible {
    package enum Literal: Sendable, Hashable {
        case int(Int)
        case double(Double)
        case string(String)
        case bool(Bool)
        case timestamp(Date)
        /// Seconds.
        case duration(Double)
    }

    /// A dotted path (`resource.attributes.amount`), or `a - b` for the difference of two timestamp paths.
    package var path: String
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`; `in` when the path's value is looked up in a literal list;
    /// `contains` when the literal is looked up in the path's list or map (`"admin" in subject.roles`).
    package var op: String
    package var literal: Literal

    package init(path: String, op: String, literal: Literal) {
        self.path = path
        self.op = op
        self.literal = literal
    }

    package var description: String { "\(path) \(op) \(literal)" }
}
