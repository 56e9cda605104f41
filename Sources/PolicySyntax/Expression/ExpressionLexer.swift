import PolicyModel

/// One token of a condition, with the line and column of its first character.
struct ExpressionToken: Sendable {
    enum Kind: Sendable, Equatable {
        case integer(UInt64)
        case double(Double)
        case string(String)
        case identifier(String)
        case symbol(String)
        case end
    }

    var kind: Kind
    var line: Int
    var column: Int
    /// Columns the token covers on its line.
    var length: Int
}

/// A lexing or parsing failure: one diagnostic, after which parsing stops.
struct ExpressionSyntaxError: Error {
    var diagnostic: Diagnostic
}

/// Splits condition text into tokens, tracking line and column per Unicode scalar.
struct ExpressionLexer {
    private let bytes: [UInt8]
    private let file: String
    private let continuationColumn: Int
    private var index = 0
    private var line: Int
    private var column: Int

    init(_ text: String, origin: SourceLocation, continuationColumn: Int) {
        bytes = Array(text.utf8)
        file = origin.file
        line = origin.line
        column = origin.column
        self.continuationColumn = continuationColumn
    }

    /// Every token up to and including `.end`, or the first lexical error.
    mutating func tokens() throws(ExpressionSyntaxError) -> [ExpressionToken] {
        var result: [ExpressionToken] = []
        while true {
            let token = try next()
            result.append(token)
            if token.kind == .end { return result }
        }
    }

    private func location(_ line: Int, _ column: Int) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column)
    }

    private func error(_ message: String, line: Int, column: Int, length: Int = 1, help: [String] = []) -> ExpressionSyntaxError {
        ExpressionSyntaxError(diagnostic: Diagnostic(.error, .expressionSyntax, message, at: location(line, column), length: length, help: help))
    }

    private func peek(_ offset: Int = 0) -> UInt8? {
        let i = index + offset
        return i < bytes.count ? bytes[i] : nil
    }

    /// Moves past one byte, counting a column at the start of each scalar and a line at each newline.
    private mutating func advance() {
        let b = bytes[index]
        index += 1
        if b == 0x0A {
            line += 1
            column = continuationColumn
        } else if b & 0xC0 != 0x80 {
            column += 1
        }
    }

    private static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private mutating func next() throws(ExpressionSyntaxError) -> ExpressionToken {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { advance() }
        let (startLine, startColumn, start) = (line, column, index)
        func token(_ kind: ExpressionToken.Kind) -> ExpressionToken {
            ExpressionToken(kind: kind, line: startLine, column: startColumn, length: max(1, column - startColumn))
        }
        guard let b = peek() else { return ExpressionToken(kind: .end, line: line, column: column, length: 1) }

        if Self.isIdentifierStart(b) {
            while let c = peek(), Self.isIdentifierStart(c) || Self.isDigit(c) { advance() }
            return token(.identifier(String(decoding: bytes[start..<index], as: UTF8.self)))
        }
        if Self.isDigit(b) { return try number(startLine, startColumn, start) }
        if b == 0x22 || b == 0x27 { return try string(quote: b, startLine, startColumn) }

        let two: [(String, UInt8, UInt8)] = [("&&", 0x26, 0x26), ("||", 0x7C, 0x7C), ("==", 0x3D, 0x3D), ("!=", 0x21, 0x3D), ("<=", 0x3C, 0x3D), (">=", 0x3E, 0x3D)]
        for (text, first, second) in two where b == first && peek(1) == second {
            advance()
            advance()
            return token(.symbol(text))
        }
        switch b {
        case 0x28, 0x29, 0x5B, 0x5D, 0x2C, 0x2E, 0x21, 0x2D, 0x2B, 0x3C, 0x3E:
            advance()
            return token(.symbol(String(UnicodeScalar(b))))
        case 0x26:
            throw error("unexpected '&'", line: startLine, column: startColumn, help: ["write '&&' for logical and"])
        case 0x7C:
            throw error("unexpected '|'", line: startLine, column: startColumn, help: ["write '||' for logical or"])
        case 0x3D:
            throw error("unexpected '='", line: startLine, column: startColumn, help: ["write '==' to compare"])
        default:
            advance()
            while let c = peek(), c & 0xC0 == 0x80 { advance() }
            let character = String(decoding: bytes[start..<index], as: UTF8.self)
            var help: [String] = []
            if "*/%?:".contains(character) { help = ["'\(character)' is not part of the condition language (see docs/expressions.md)"] }
            throw error("unexpected character '\(character)'", line: startLine, column: startColumn, help: help)
        }
    }

    private mutating func number(_ startLine: Int, _ startColumn: Int, _ start: Int) throws(ExpressionSyntaxError) -> ExpressionToken {
        while let c = peek(), Self.isDigit(c) { advance() }
        var isDouble = false
        if peek() == 0x2E, let c = peek(1), Self.isDigit(c) {
            isDouble = true
            advance()
            while let c = peek(), Self.isDigit(c) { advance() }
        }
        if let e = peek(), e == 0x65 || e == 0x45 {
            var offset = 1
            if let sign = peek(1), sign == 0x2B || sign == 0x2D { offset = 2 }
            if let c = peek(offset), Self.isDigit(c) {
                isDouble = true
                for _ in 0..<offset { advance() }
                while let c = peek(), Self.isDigit(c) { advance() }
            }
        }
        let length = column - startColumn
        if let c = peek(), Self.isIdentifierStart(c) {
            throw error("unexpected character '\(UnicodeScalar(c))' after number", line: line, column: column)
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isDouble {
            guard let value = Double(text), value.isFinite else {
                throw error("number '\(text)' is out of range", line: startLine, column: startColumn, length: length)
            }
            return ExpressionToken(kind: .double(value), line: startLine, column: startColumn, length: length)
        }
        guard let value = UInt64(text) else {
            throw error("integer '\(text)' is out of range", line: startLine, column: startColumn, length: length,
                        help: ["integers are 64-bit: from -9223372036854775808 to 9223372036854775807"])
        }
        return ExpressionToken(kind: .integer(value), line: startLine, column: startColumn, length: length)
    }

    private mutating func string(quote: UInt8, _ startLine: Int, _ startColumn: Int) throws(ExpressionSyntaxError) -> ExpressionToken {
        advance()
        var content: [UInt8] = []
        while true {
            guard let c = peek(), c != 0x0A else {
                throw error("unterminated string", line: startLine, column: startColumn,
                            help: ["close the string with \(quote == 0x22 ? "\"" : "'") on the same line"])
            }
            if c == quote {
                advance()
                break
            }
            if c == 0x5C {
                let (escapeLine, escapeColumn) = (line, column)
                advance()
                switch peek() {
                case 0x22: content.append(0x22)
                case 0x27: content.append(0x27)
                case 0x5C: content.append(0x5C)
                case 0x6E: content.append(0x0A)
                case 0x74: content.append(0x09)
                case nil, 0x0A:
                    throw error("unterminated string", line: startLine, column: startColumn)
                case let other?:
                    var text = String(UnicodeScalar(other))
                    if other & 0x80 != 0 { text = "?" }
                    throw error("invalid escape '\\\(text)' in string", line: escapeLine, column: escapeColumn, length: 2,
                                help: ["the escapes are \\\" \\' \\\\ \\n \\t"])
                }
                advance()
                continue
            }
            content.append(c)
            advance()
        }
        let length = line == startLine ? column - startColumn : 1
        return ExpressionToken(kind: .string(String(decoding: content, as: UTF8.self)), line: startLine, column: startColumn, length: length)
    }
}
