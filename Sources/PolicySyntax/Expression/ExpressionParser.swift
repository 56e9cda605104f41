import PolicyModel

/// Parses condition text (a subset of CEL, see docs/expressions.md) into a located `Expr`.
package enum ExpressionParser {
    /// Longest condition accepted, in UTF-8 bytes.
    package static let maximumLength = 4096
    /// Deepest nesting accepted: of brackets and unary operators while parsing, and of the finished tree.
    package static let maximumDepth = 64

    /// `origin` is the location of the first character of `text` in its file; after a newline in `text`,
    /// columns restart at `continuationColumn` (default origin.column). Diagnostics point at the exact token.
    package static func parse(_ text: String, origin: SourceLocation, continuationColumn: Int? = nil) -> Result<Expr, ExpressionDiagnostics> {
        let byteCount = text.utf8.count
        guard byteCount <= maximumLength else {
            return .failure(ExpressionDiagnostics([Diagnostic(
                .error, .expressionTooLong, "condition is \(byteCount) bytes long; the limit is \(maximumLength)", at: origin,
                help: ["split the rule into several rules, or move long lists into attributes"])]))
        }
        var lexer = ExpressionLexer(text, origin: origin, continuationColumn: continuationColumn ?? origin.column)
        do throws(ExpressionSyntaxError) {
            var parser = ExpressionParserState(tokens: try lexer.tokens(), file: origin.file)
            return .success(try parser.parseCondition())
        } catch {
            return .failure(ExpressionDiagnostics([error.diagnostic]))
        }
    }
}

/// A parsed subtree with the depth of its tree and the position just after its last character.
private struct Parsed {
    var expr: Expr
    var depth: Int
    var endLine: Int
    var endColumn: Int
}

private struct ExpressionParserState {
    let tokens: [ExpressionToken]
    let file: String
    var position = 0
    /// Brackets and unary operators open around the current token; bounds the parser's recursion.
    var nesting = 0

    init(tokens: [ExpressionToken], file: String) {
        self.tokens = tokens
        self.file = file
    }

    var current: ExpressionToken { tokens[min(position, tokens.count - 1)] }

    mutating func take() -> ExpressionToken {
        let token = current
        if position < tokens.count - 1 { position += 1 }
        return token
    }

    func location(of token: ExpressionToken) -> SourceLocation {
        SourceLocation(file: file, line: token.line, column: token.column)
    }

    func span(of token: ExpressionToken) -> ExpressionSpan {
        ExpressionSpan(location: location(of: token), length: token.length)
    }

    /// The span from `start` to the end of `end`; one column when they are on different lines.
    func span(from start: SourceLocation, to end: Parsed) -> ExpressionSpan {
        span(from: start, endLine: end.endLine, endColumn: end.endColumn)
    }

    func span(from start: SourceLocation, endLine: Int, endColumn: Int) -> ExpressionSpan {
        ExpressionSpan(location: start, length: endLine == start.line ? endColumn - start.column : 1)
    }

    func end(of token: ExpressionToken) -> (Int, Int) { (token.line, token.column + token.length) }

    func syntaxError(_ message: String, at token: ExpressionToken, help: [String] = []) -> ExpressionSyntaxError {
        ExpressionSyntaxError(diagnostic: Diagnostic(.error, .expressionSyntax, message, at: location(of: token), length: token.length, help: help))
    }

    func describe(_ token: ExpressionToken) -> String {
        switch token.kind {
        case .integer(let v): "'\(v)'"
        case .double(let v): "'\(v)'"
        case .string: "string"
        case .identifier(let name): "'\(name)'"
        case .symbol(let s): "'\(s)'"
        case .end: "end of condition"
        }
    }

    func isSymbol(_ s: String) -> Bool { current.kind == .symbol(s) }

    mutating func expect(_ s: String, closing opener: ExpressionToken? = nil) throws(ExpressionSyntaxError) -> ExpressionToken {
        guard isSymbol(s) else {
            var message = "expected '\(s)' but found \(describe(current))"
            if let opener { message = "expected '\(s)' to close '\(describe(opener).dropFirst().dropLast())' at \(opener.line):\(opener.column), but found \(describe(current))" }
            throw syntaxError(message, at: current)
        }
        return take()
    }

    /// Counts one more level of brackets or unary operators, failing past the limit.
    mutating func enter(_ token: ExpressionToken) throws(ExpressionSyntaxError) {
        nesting += 1
        if nesting > ExpressionParser.maximumDepth { throw tooDeep(at: location(of: token), length: token.length) }
    }

    func tooDeep(at location: SourceLocation, length: Int) -> ExpressionSyntaxError {
        ExpressionSyntaxError(diagnostic: Diagnostic(
            .error, .expressionTooDeep, "condition nests deeper than \(ExpressionParser.maximumDepth) levels", at: location, length: length,
            help: ["split the condition into several rules"]))
    }

    func node(_ expr: Expr, depth: Int, endLine: Int, endColumn: Int) throws(ExpressionSyntaxError) -> Parsed {
        if depth > ExpressionParser.maximumDepth { throw tooDeep(at: expr.span.location, length: expr.span.length) }
        return Parsed(expr: expr, depth: depth, endLine: endLine, endColumn: endColumn)
    }

    mutating func parseCondition() throws(ExpressionSyntaxError) -> Expr {
        if current.kind == .end { throw syntaxError("empty condition", at: current, help: ["write a condition such as subject.signedIn"]) }
        let result = try parseBinary(level: 1)
        guard current.kind == .end else {
            throw syntaxError("unexpected \(describe(current)) after a complete condition", at: current,
                              help: ["combine conditions with && or ||"])
        }
        return result.expr
    }

    func binaryOperator(_ token: ExpressionToken) -> BinaryOperator? {
        switch token.kind {
        case .symbol(let s): BinaryOperator(rawValue: s)
        case .identifier("in"): .in
        default: nil
        }
    }

    mutating func parseBinary(level: Int) throws(ExpressionSyntaxError) -> Parsed {
        if level > 4 { return try parseUnary() }
        var left = try parseBinary(level: level + 1)
        while let op = binaryOperator(current), op.precedence == level {
            let opToken = take()
            let right = try parseBinary(level: level + 1)
            let start = left.expr.span.location
            left = try node(
                .binary(op, left.expr, right.expr, operatorSpan: span(of: opToken), span(from: start, to: right)),
                depth: max(left.depth, right.depth) + 1, endLine: right.endLine, endColumn: right.endColumn)
        }
        return left
    }

    mutating func parseUnary() throws(ExpressionSyntaxError) -> Parsed {
        guard isSymbol("!") || isSymbol("-") else { return try parsePostfix() }
        let opToken = take()
        let start = location(of: opToken)
        // A minus directly before an integer literal is part of the literal, so the smallest integer can be written.
        if opToken.kind == .symbol("-"), case .integer(let magnitude) = current.kind {
            let literal = current
            if magnitude <= UInt64(Int.max) + 1 {
                _ = take()
                let value = magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)
                let (endLine, endColumn) = end(of: literal)
                let parsed = try node(.literal(.int(value), span(from: start, endLine: endLine, endColumn: endColumn)), depth: 1, endLine: endLine, endColumn: endColumn)
                return try parsePostfixOperators(parsed)
            }
        }
        try enter(opToken)
        let operand = try parseUnary()
        nesting -= 1
        let op: UnaryOperator = opToken.kind == .symbol("!") ? .not : .negate
        return try node(.unary(op, operand.expr, span(from: start, to: operand)), depth: operand.depth + 1,
                        endLine: operand.endLine, endColumn: operand.endColumn)
    }

    mutating func parsePostfix() throws(ExpressionSyntaxError) -> Parsed {
        try parsePostfixOperators(try parsePrimary())
    }

    mutating func parsePostfixOperators(_ base: Parsed) throws(ExpressionSyntaxError) -> Parsed {
        var result = base
        while true {
            let start = result.expr.span.location
            if isSymbol(".") {
                let dot = take()
                guard case .identifier(let name) = current.kind, name != "in" else {
                    throw syntaxError("expected a field name after '.', found \(describe(current))", at: current.kind == .end ? dot : current)
                }
                let nameToken = take()
                if isSymbol("(") {
                    let (arguments, close) = try parseArguments()
                    let (endLine, endColumn) = end(of: close)
                    result = try node(
                        .call(receiver: result.expr, name: name, nameSpan: span(of: nameToken), arguments: arguments.map(\.expr),
                              span(from: start, endLine: endLine, endColumn: endColumn)),
                        depth: max(result.depth, arguments.map(\.depth).max() ?? 0) + 1, endLine: endLine, endColumn: endColumn)
                } else {
                    let (endLine, endColumn) = end(of: nameToken)
                    result = try node(
                        .member(result.expr, name: name, nameSpan: span(of: nameToken), span(from: start, endLine: endLine, endColumn: endColumn)),
                        depth: result.depth + 1, endLine: endLine, endColumn: endColumn)
                }
            } else if isSymbol("[") {
                let (key, endLine, endColumn) = try parseEnclosed(closedBy: "]")
                result = try node(.index(result.expr, key.expr, span(from: start, endLine: endLine, endColumn: endColumn)),
                                  depth: max(result.depth, key.depth) + 1, endLine: endLine, endColumn: endColumn)
            } else {
                return result
            }
        }
    }

    /// `( a, b )` after a function name; returns the arguments and the closing parenthesis.
    /// One expression between the opening bracket the cursor is on and its `close`, and where the closer ends.
    mutating func parseEnclosed(closedBy close: String) throws(ExpressionSyntaxError) -> (Parsed, endLine: Int, endColumn: Int) {
        let open = take()
        try enter(open)
        let inner = try parseBinary(level: 1)
        let closer = try expect(close, closing: open)
        nesting -= 1
        let (endLine, endColumn) = end(of: closer)
        return (inner, endLine, endColumn)
    }

    mutating func parseArguments() throws(ExpressionSyntaxError) -> ([Parsed], ExpressionToken) {
        let open = try expect("(")
        try enter(open)
        var arguments: [Parsed] = []
        if !isSymbol(")") {
            while true {
                arguments.append(try parseBinary(level: 1))
                if isSymbol(",") { _ = take() } else { break }
            }
        }
        let close = try expect(")", closing: open)
        nesting -= 1
        return (arguments, close)
    }

    mutating func parsePrimary() throws(ExpressionSyntaxError) -> Parsed {
        let token = current
        let (endLine, endColumn) = end(of: token)
        switch token.kind {
        case .integer(let magnitude):
            guard magnitude <= UInt64(Int.max) else {
                throw syntaxError("integer \(magnitude) is out of range", at: token,
                                  help: ["integers are 64-bit: from -9223372036854775808 to 9223372036854775807"])
            }
            _ = take()
            return try node(.literal(.int(Int(magnitude)), span(of: token)), depth: 1, endLine: endLine, endColumn: endColumn)
        case .double(let value):
            _ = take()
            return try node(.literal(.double(value), span(of: token)), depth: 1, endLine: endLine, endColumn: endColumn)
        case .string(let value):
            _ = take()
            return try node(.literal(.string(value), span(of: token)), depth: 1, endLine: endLine, endColumn: endColumn)
        case .identifier(let name):
            let literal: ExpressionLiteral? = switch name {
            case "true": .bool(true)
            case "false": .bool(false)
            case "null": .null
            default: nil
            }
            if let literal {
                _ = take()
                return try node(.literal(literal, span(of: token)), depth: 1, endLine: endLine, endColumn: endColumn)
            }
            if name == "in" { throw syntaxError("unexpected 'in'", at: token, help: ["'in' needs a value on its left: x in [a, b]"]) }
            _ = take()
            if isSymbol("(") {
                let (arguments, close) = try parseArguments()
                let (endLine, endColumn) = end(of: close)
                return try node(
                    .call(receiver: nil, name: name, nameSpan: span(of: token), arguments: arguments.map(\.expr),
                          span(from: location(of: token), endLine: endLine, endColumn: endColumn)),
                    depth: (arguments.map(\.depth).max() ?? 0) + 1, endLine: endLine, endColumn: endColumn)
            }
            return try node(.identifier(name, span(of: token)), depth: 1, endLine: endLine, endColumn: endColumn)
        case .symbol("("):
            let (inner, endLine, endColumn) = try parseEnclosed(closedBy: ")")
            return Parsed(expr: inner.expr, depth: inner.depth, endLine: endLine, endColumn: endColumn)
        case .symbol("["):
            let open = take()
            try enter(open)
            var elements: [Parsed] = []
            while !isSymbol("]") {
                elements.append(try parseBinary(level: 1))
                if isSymbol(",") { _ = take() } else { break }
            }
            let close = try expect("]", closing: open)
            nesting -= 1
            let (endLine, endColumn) = end(of: close)
            return try node(.list(elements.map(\.expr), span(from: location(of: open), endLine: endLine, endColumn: endColumn)),
                            depth: (elements.map(\.depth).max() ?? 0) + 1, endLine: endLine, endColumn: endColumn)
        case .end:
            throw syntaxError("unexpected end of condition", at: token, help: ["the condition stops in the middle of an expression"])
        case .symbol(let s):
            throw syntaxError("unexpected '\(s)'", at: token)
        }
    }
}
