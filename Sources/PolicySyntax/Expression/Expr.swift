import PolicyModel

/// Where a piece of a condition sits: its first character and how many columns it underlines.
///
/// Columns count Unicode scalars. A node that spans several lines underlines one column.
package struct ExpressionSpan: Sendable, Hashable {
    package var location: SourceLocation
    package var length: Int

    package init(location: SourceLocation, length: Int) {
        self.location = location
        self.length = max(1, length)
    }
}

/// A literal as written in a condition.
package enum ExpressionLiteral: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
}

package enum UnaryOperator: String, Sendable, Hashable {
    case not = "!"
    case negate = "-"
}

package enum BinaryOperator: String, Sendable, Hashable, CaseIterable {
    case or = "||"
    case and = "&&"
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case `in` = "in"
    case add = "+"
    case subtract = "-"

    /// Binding strength: higher binds tighter. Every level is left-associative, as in CEL.
    package var precedence: Int {
        switch self {
        case .or: 1
        case .and: 2
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual, .in: 3
        case .add, .subtract: 4
        }
    }
}

/// The syntax tree of one condition; every node carries the span of its source text.
package indirect enum Expr: Sendable, Hashable {
    case literal(ExpressionLiteral, ExpressionSpan)
    /// `[a, b]`.
    case list([Expr], ExpressionSpan)
    /// A bare name: `subject`, `resource`, `context` (any other name is reported by the checker).
    case identifier(String, ExpressionSpan)
    /// `base.name`; `nameSpan` underlines the name after the dot.
    case member(Expr, name: String, nameSpan: ExpressionSpan, ExpressionSpan)
    /// `base[key]`.
    case index(Expr, Expr, ExpressionSpan)
    /// `name(args)`, or `receiver.name(args)` for a method.
    case call(receiver: Expr?, name: String, nameSpan: ExpressionSpan, arguments: [Expr], ExpressionSpan)
    case unary(UnaryOperator, Expr, ExpressionSpan)
    /// `left op right`; `operatorSpan` underlines the operator.
    case binary(BinaryOperator, Expr, Expr, operatorSpan: ExpressionSpan, ExpressionSpan)

    /// The span of the whole node.
    package var span: ExpressionSpan {
        switch self {
        case .literal(_, let s), .list(_, let s), .identifier(_, let s), .member(_, _, _, let s), .index(_, _, let s),
            .call(_, _, _, _, let s), .unary(_, _, let s), .binary(_, _, _, _, let s):
            s
        }
    }

    /// The dotted path a member chain spells (`subject.auth.method`), or nil if it is not a plain path.
    package var dottedPath: String? {
        switch self {
        case .identifier(let name, _): name
        case .member(let base, let name, _, _): base.dottedPath.map { "\($0).\(name)" }
        default: nil
        }
    }
}

/// The problems found in a condition, as diagnostics ready to report.
package struct ExpressionDiagnostics: Error, Sendable {
    package var diagnostics: [Diagnostic]

    package init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
}
