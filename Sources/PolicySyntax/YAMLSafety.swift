import PolicyModel

/// Limits that keep a hostile policy file from exhausting time, memory or stack.
public struct YAMLLimits: Sendable, Hashable {
    public var maxFileBytes = 1 << 20
    public var maxDepth = 64
    public var maxNodes = 200_000

    public init() {}
}

/// Scans raw YAML text before Yams composes it, refusing what policy files never need but attackers use:
/// anchors and aliases (alias bombs hang composition), tags, complex mapping keys (`? ` or a collection as a key: Yams'
/// duplicate check walks them, exponentially in their nesting), and nesting deep enough to exhaust the stack.
///
/// The scan follows YAML's lexical rules closely enough to find the start of every node: it skips
/// comments, quoted scalars and block scalars, so an `&` or `*` inside text is left alone. It is
/// conservative: when in doubt it reports, which at worst refuses a file Yams would also refuse.
enum YAMLSafetyScanner {
    static func scan(_ file: SourceFile, limits: YAMLLimits) -> [Diagnostic] {
        // In ASCII text without carriage returns every Character is one byte, so scanning bytes finds exactly what
        // scanning Characters does (same lines, same columns) without grapheme breaking; anything else scans Characters.
        let utf8 = file.text.utf8
        if utf8.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) {
            let lines = utf8.split(separator: 0x0A, omittingEmptySubsequences: false).lazy.map { $0.map(ASCIIUnit.init) }
            return scan(lines: lines, file: file, limits: limits)
        }
        let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).lazy.map { rawLine in
            Array(rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine)
        }
        return scan(lines: lines, file: file, limits: limits)
    }

    private static func scan<Lines: Sequence, Unit: Equatable & ExpressibleByUnicodeScalarLiteral>(
        lines: Lines, file: SourceFile, limits: YAMLLimits
    ) -> [Diagnostic] where Lines.Element == [Unit] {
        var diagnostics: [Diagnostic] = []
        var flowDepth = 0
        var indentStack: [Int] = []
        var blockScalarIndent: Int?  // while inside a block scalar: the indentation of its parent line
        var quote: Unit?  // open quoted scalar spanning lines
        var lineNumber = 0
        var reportedDepth = false

        func report(_ code: DiagnosticCode, _ message: String, line: Int, column: Int, help: [String] = []) {
            guard diagnostics.count < 20 else { return }
            diagnostics.append(Diagnostic(.error, code, message, at: file.location(line: line, column: column), help: help))
        }

        // Yams' duplicate-key check compares keys by walking them, so keys nested in keys take time exponential in the
        // nesting: a 983-byte file of explicit keys took minutes (the yaml-safety fuzz target). A policy's keys are names.
        func complexKey(line: Int, column: Int) {
            report(
                .yamlSyntax, "complex mapping keys are not allowed in policy files", line: line, column: column,
                help: ["write the key as a name (plain or quoted text); `? ` and a list or mapping as a key are not policy syntax"])
        }

        for line in lines {
            lineNumber += 1
            let indent = line.prefix { $0 == " " }.count
            let isBlank = line.allSatisfy { $0 == " " || $0 == "\t" }

            if let parentIndent = blockScalarIndent {
                if isBlank || indent > parentIndent { continue }
                blockScalarIndent = nil
            }

            var i = 0
            var atNodeStart = quote == nil && flowDepth == 0
            if quote == nil, flowDepth == 0, !isBlank, line.first != "#" {
                // Block structure: indentation opens and closes levels.
                while let top = indentStack.last, top >= indent { indentStack.removeLast() }
                indentStack.append(indent)
                i = indent
            }
            var extraDepth = 0
            var deepestFlow = flowDepth
            while i < line.count {
                let c = line[i]
                if let q = quote {
                    if q == "'" {
                        if c == "'" {
                            if i + 1 < line.count, line[i + 1] == "'" { i += 2; continue }
                            quote = nil
                        }
                    } else {
                        if c == "\\" { i += 2; continue }
                        if c == "\"" { quote = nil }
                    }
                    i += 1
                    continue
                }
                if c == " " || c == "\t" { i += 1; continue }
                if c == "#", i == 0 || line[i - 1] == " " || line[i - 1] == "\t" { break }
                if atNodeStart {
                    switch c {
                    case "&", "*":
                        let kind = c == "&" ? "anchors" : "aliases"
                        report(
                            .yamlAlias, "YAML \(kind) are not allowed in policy files", line: lineNumber, column: i + 1,
                            help: ["write the value out in full; anchors and aliases can expand a small file without bound"])
                        i += 1
                        atNodeStart = false
                        continue
                    case "!":
                        report(.yamlTag, "YAML tags are not allowed in policy files", line: lineNumber, column: i + 1,
                               help: ["remove the tag; quote the value if it should be a string"])
                        while i < line.count, line[i] != " " { i += 1 }
                        continue
                    case "-", "?", ":":
                        // Block indicators start a nested node when followed by a space or the line's end.
                        if i + 1 == line.count || line[i + 1] == " " || line[i + 1] == "\t" {
                            if c == "?" { complexKey(line: lineNumber, column: i + 1) }
                            if flowDepth == 0, c != ":" { extraDepth += 1 }
                            i += 1
                            continue
                        }
                    case "|", ">":
                        if flowDepth == 0 { blockScalarIndent = indentStack.last ?? 0 }
                        i = line.count
                        continue
                    default: break
                    }
                }
                switch c {
                case "'", "\"":
                    if atNodeStart { quote = c }
                    atNodeStart = false
                case "[", "{":
                    if atNodeStart || flowDepth > 0 {
                        flowDepth += 1
                        deepestFlow = max(deepestFlow, flowDepth)
                        atNodeStart = true
                    }
                case "]", "}":
                    atNodeStart = false
                    guard flowDepth > 0 else { break }  // a bracket inside plain text (`see [docs]:here`)
                    flowDepth -= 1
                    // A collection followed by `:` is a mapping key.
                    var next = i + 1
                    while next < line.count, line[next] == " " || line[next] == "\t" { next += 1 }
                    if next < line.count, line[next] == ":" { complexKey(line: lineNumber, column: next + 1) }
                case ",":
                    atNodeStart = flowDepth > 0
                case ":":
                    let next: Unit = i + 1 < line.count ? line[i + 1] : " "
                    if next == " " || next == "\t" || (flowDepth > 0 && (next == "," || next == "]" || next == "}")) {
                        atNodeStart = true
                    } else {
                        atNodeStart = false
                    }
                default:
                    atNodeStart = false
                }
                i += 1
            }
            let depth = indentStack.count + extraDepth + deepestFlow
            if depth > limits.maxDepth, !reportedDepth {
                reportedDepth = true
                report(
                    .yamlTooDeep, "nesting is deeper than \(limits.maxDepth) levels", line: lineNumber,
                    column: indent + 1, help: ["policy files need only a few levels; flatten the structure"])
            }
        }
        return diagnostics
    }
}

/// One byte of ASCII text, comparable with character literals.
private struct ASCIIUnit: Equatable, ExpressibleByUnicodeScalarLiteral {
    let byte: UInt8
    init(_ byte: UInt8) { self.byte = byte }
    init(unicodeScalarLiteral scalar: Unicode.Scalar) { byte = UInt8(truncatingIfNeeded: scalar.value) }
}
