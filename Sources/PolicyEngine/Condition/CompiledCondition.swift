import Foundation
import PolicyModel

/// A condition of a rule, checked and compiled: evaluating it parses nothing and looks up no fixed path by name.
package struct CompiledCondition: Sendable {
    /// The original text, for explain traces.
    package let source: String
    package let location: SourceLocation
    package let root: ConditionNode
    /// Every path the condition reads, in order of first appearance.
    package let readPaths: [String]

    package init(source: String, location: SourceLocation, root: ConditionNode, readPaths: [String]) {
        self.source = source
        self.location = location
        self.root = root
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
