import PolicyModel
import PolicySyntax
import Testing
import GatehouseTestSupport

/// Renders a tree fully parenthesised, so a test states precedence and associativity as text.
func render(_ e: Expr) -> String {
    switch e {
    case .literal(let l, _):
        switch l {
        case .null: return "null"
        case .bool(let b): return "\(b)"
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .string(let s): return "\"\(s)\""
        }
    case .list(let items, _): return "[" + items.map(render).joined(separator: ", ") + "]"
    case .identifier(let n, _): return n
    case .member(let b, let n, _, _): return "\(render(b)).\(n)"
    case .index(let b, let k, _): return "\(render(b))[\(render(k))]"
    case .call(let r, let n, _, let args, _):
        return (r.map { render($0) + "." } ?? "") + n + "(" + args.map(render).joined(separator: ", ") + ")"
    case .unary(let op, let x, _): return "(\(op.rawValue)\(render(x)))"
    case .binary(let op, let a, let b, _, _): return "(\(render(a)) \(op.rawValue) \(render(b)))"
    }
}

let origin = SourceLocation(file: "p.yaml", line: 3, column: 12)

func parse(_ text: String, continuation: Int? = nil) -> Result<Expr, ExpressionDiagnostics> {
    ExpressionParser.parse(text, origin: origin, continuationColumn: continuation)
}

func parsed(_ text: String) -> String? {
    guard case .success(let e) = parse(text) else { return nil }
    return render(e)
}

func failure(_ text: String, continuation: Int? = nil) -> Diagnostic? {
    guard case .failure(let d) = parse(text, continuation: continuation) else { return nil }
    return d.diagnostics.first
}

@Suite struct ExpressionParserTests {
    @Test(arguments: [
        ("a || b && c", "(a || (b && c))"),
        ("a && b || c", "((a && b) || c)"),
        ("a || b || c", "((a || b) || c)"),
        ("a && b && c", "((a && b) && c)"),
        ("1 + 2 - 3", "((1 + 2) - 3)"),
        ("1 - 2 + 3", "((1 - 2) + 3)"),
        ("a == b && c < d || !e", "(((a == b) && (c < d)) || (!e))"),
        ("a + 1 < b - 2", "((a + 1) < (b - 2))"),
        ("a < b == c", "((a < b) == c)"),
        ("x in [1, 2] && y", "((x in [1, 2]) && y)"),
        ("a + b in c", "((a + b) in c)"),
        ("!a.b", "(!a.b)"),
        ("!!a", "(!(!a))"),
        ("-x.y[0]", "(-x.y[0])"),
        ("- 5", "-5"),
        ("-(5)", "(-5)"),
        ("1 - -2", "(1 - -2)"),
        ("(a || b) && c", "((a || b) && c)"),
        ("a.b.c[d.e][0]", "a.b.c[d.e][0]"),
    ])
    func precedenceAndAssociativity(text: String, expected: String) {
        #expect(parsed(text) == expected)
    }

    @Test(arguments: [
        ("42", "42"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775807", "9223372036854775807"),
        ("1.5", "1.5"),
        ("2e3", "2000.0"),
        ("2.5E-1", "0.25"),
        ("true", "true"),
        ("false", "false"),
        ("null", "null"),
        (#""a\"b\\c""#, "\"a\"b\\c\""),
        (#"'it\'s'"#, "\"it's\""),
        (#"'say "hi"'"#, "\"say \"hi\"\""),
        (#""tab\tnl\n""#, "\"tab\tnl\n\""),
        ("[]", "[]"),
        ("[1, 'a', [true]]", "[1, \"a\", [true]]"),
        ("[1, 2,]", "[1, 2]"),
        ("has(subject.id)", "has(subject.id)"),
        ("size(x) > 0", "(size(x) > 0)"),
        ("f()", "f()"),
        ("subject.id.startsWith('a')", "subject.id.startsWith(\"a\")"),
        ("resource.members[subject.id]", "resource.members[subject.id]"),
        ("duration(\"5m\")", "duration(\"5m\")"),
        ("a\n  &&\tb", "(a && b)"),
        ("\"héllo 🎉\" == x", "(\"héllo 🎉\" == x)"),
    ])
    func everyConstruct(text: String, expected: String) {
        #expect(parsed(text) == expected)
    }

    @Test func spansCoverTheirText() throws {
        let e = try parse("subject.tierr == 'pro'").get()
        guard case .binary(.equal, .member(_, "tierr", let nameSpan, let memberSpan), .literal(_, let literalSpan), let opSpan, let whole) = e else {
            Issue.record("unexpected tree \(e)")
            return
        }
        #expect(nameSpan == ExpressionSpan(location: SourceLocation(file: "p.yaml", line: 3, column: 20), length: 5))
        #expect(memberSpan == ExpressionSpan(location: origin, length: 13))
        #expect(opSpan.location.column == 26 && opSpan.length == 2)
        #expect(literalSpan.location.column == 29 && literalSpan.length == 5)
        #expect(whole == ExpressionSpan(location: origin, length: 22))
    }

    @Test func columnsCountUnicodeScalars() throws {
        let e = try parse("'é🎉' == subject.id").get()
        guard case .binary(_, _, let right, _, _) = e else { return }
        #expect(right.span.location.column == 12 + 8)
    }

    @Test func continuationLinesRestartAtTheGivenColumn() throws {
        let e = try parse("subject.signedIn &&\nresource.id == 'x'", continuation: 7).get()
        guard case .binary(.and, _, let right, _, _) = e else { return }
        #expect(right.span.location == SourceLocation(file: "p.yaml", line: 4, column: 7))
        // Without a continuation column, later lines start at the origin's column.
        let f = try parse("a ||\nb").get()
        guard case .binary(.or, _, let b, _, _) = f else { return }
        #expect(b.span.location == SourceLocation(file: "p.yaml", line: 4, column: 12))
    }

    @Test(arguments: [
        // (text, line, column, length, message)
        ("subject.tier ==", 3, 27, 1, "unexpected end of condition"),
        ("", 3, 12, 1, "empty condition"),
        ("a b", 3, 14, 1, "unexpected 'b' after a complete condition"),
        ("(a || b", 3, 19, 1, "expected ')' to close '(' at 3:12, but found end of condition"),
        ("[1, 2", 3, 17, 1, "expected ']' to close '[' at 3:12, but found end of condition"),
        ("a = b", 3, 14, 1, "unexpected '='"),
        ("a & b", 3, 14, 1, "unexpected '&'"),
        ("a * b", 3, 14, 1, "unexpected character '*'"),
        ("\"abc", 3, 12, 1, "unterminated string"),
        ("'", 3, 12, 1, "unterminated string"),
        (#"x == "a\qb""#, 3, 19, 2, #"invalid escape '\q' in string"#),
        ("x == 'é' && é", 3, 24, 1, "unexpected character 'é'"),
        ("9223372036854775808", 3, 12, 19, "integer 9223372036854775808 is out of range"),
        ("99999999999999999999", 3, 12, 20, "integer '99999999999999999999' is out of range"),
        ("1e999", 3, 12, 5, "number '1e999' is out of range"),
        ("12abc", 3, 14, 1, "unexpected character 'a' after number"),
        ("a.", 3, 13, 1, "expected a field name after '.', found end of condition"),
        ("a.1", 3, 14, 1, "expected a field name after '.', found '1'"),
        ("in x", 3, 12, 2, "unexpected 'in'"),
        ("f(a,)", 3, 16, 1, "unexpected ')'"),
        ("a && )", 3, 17, 1, "unexpected ')'"),
    ])
    func syntaxErrorsPointAtTheToken(text: String, line: Int, column: Int, length: Int, message: String) throws {
        let d = try #require(failure(text))
        #expect(d.code == "expression-syntax")
        #expect(d.message == message)
        #expect(d.location == SourceLocation(file: "p.yaml", line: line, column: column))
        #expect(d.length == length)
    }

    @Test func syntaxErrorsOnContinuationLines() throws {
        let d = try #require(failure("subject.signedIn &&\n  resource.id == 'x\n", continuation: 7))
        #expect(d.message == "unterminated string")
        #expect(d.location == SourceLocation(file: "p.yaml", line: 4, column: 24))
        let e = try #require(failure("a ||\n\n   (b && c", continuation: 5))
        #expect(e.location == SourceLocation(file: "p.yaml", line: 5, column: 15))
    }

    @Test func syntaxErrorsCarryHelp() throws {
        let d = try #require(failure("a & b"))
        #expect(d.help == ["write '&&' for logical and"])
        let e = try #require(failure("a b"))
        #expect(e.help == ["combine conditions with && or ||"])
    }

    // MARK: Hostile input

    @Test func tenThousandNestedParensAreTooLong() throws {
        let text = String(repeating: "(", count: 10_000) + "a" + String(repeating: ")", count: 10_000)
        let d = try #require(failure(text))
        #expect(d.code == "expression-too-long")
        #expect(d.location == origin)
    }

    @Test(arguments: [
        String(repeating: "(", count: 2000) + "a" + String(repeating: ")", count: 2000),
        String(repeating: "(", count: 65) + "a" + String(repeating: ")", count: 65),
        String(repeating: "[", count: 2000),
        String(repeating: "!", count: 3000) + "a",
        String(repeating: "-", count: 3000) + "a",
        "a" + String(repeating: " + a", count: 1000),
        "a" + String(repeating: " || a", count: 800),
        "a" + String(repeating: ".b", count: 1500),
        "a" + String(repeating: "[0]", count: 1000),
        String(repeating: "f(", count: 1500),
    ])
    func deepInputIsTooDeep(text: String) throws {
        let d = try #require(failure(text))
        #expect(d.code == "expression-too-deep")
    }

    @Test func sixtyFourLevelsAreAccepted() {
        let text = String(repeating: "(", count: 63) + "a" + String(repeating: ")", count: 63)
        #expect(parsed(text) == "a")
        #expect(parsed("a" + String(repeating: " || a", count: 40)) != nil)
    }

    @Test func hundredKilobyteStringIsTooLong() throws {
        let text = "'" + String(repeating: "x", count: 100_000) + "'"
        let d = try #require(failure(text))
        #expect(d.code == "expression-too-long")
        #expect(d.message == "condition is 100002 bytes long; the limit is 4096")
    }

    @Test func lengthCountsUTF8Bytes() {
        let text = "'" + String(repeating: "é", count: 2047) + "'"  // 4096 bytes
        #expect(parsed(text) != nil)
        #expect(failure("'" + String(repeating: "é", count: 2048) + "'")?.code == "expression-too-long")
    }

    @Test func randomInputNeverCrashes() {
        let alphabet = Array("ab.()[]!-+&|=<>,'\"\\ 0123456789nulltrueinhas\n\té🎉*")
        var rng = SplitMix(seed: 7)
        var failures = 0
        for _ in 0..<3000 {
            let length = Int(rng.next() % 40)
            var text = ""
            for _ in 0..<length { text.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            if case .failure(let d) = parse(text) {
                failures += 1
                #expect(d.diagnostics.count == 1)
                #expect(d.diagnostics[0].location != nil)
            }
        }
        #expect(failures > 1000)
    }
}

typealias SplitMix = SeededRandom
