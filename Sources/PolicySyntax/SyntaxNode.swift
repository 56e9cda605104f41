import Foundation
import PolicyModel
import Yams

/// A YAML node with the place it was written: the syntax tree every later pass reads.
public struct SyntaxNode: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A scalar's text; `quoted` is true for quoted and block scalars, whose text is never a number or bool.
        case scalar(String, quoted: Bool)
        case sequence([SyntaxNode])
        case mapping([Entry])
    }

    public struct Entry: Sendable, Hashable {
        public var key: SyntaxNode
        public var value: SyntaxNode
    }

    public var kind: Kind
    /// Where the node starts: for a quoted scalar, its opening quote; for a block scalar, its `|` or `>`.
    public var location: SourceLocation
    /// Where a scalar's text itself starts (inside the quote, or on the first content line of a block).
    public var textLocation: SourceLocation
    /// For block scalars: the column every further line of the text starts at.
    public var continuationColumn: Int?
    /// For folded (`>`) scalars: the text with its line breaks kept, so positions in it map back to
    /// the file line by line. Expressions read this; messages read the folded value.
    public var unfoldedText: String?

    public init(_ kind: Kind, at location: SourceLocation, textLocation: SourceLocation? = nil, continuationColumn: Int? = nil) {
        self.kind = kind
        self.location = location
        self.textLocation = textLocation ?? location
        self.continuationColumn = continuationColumn
    }

    /// The scalar's text whatever its style, or nil for collections.
    public var text: String? {
        if case .scalar(let s, _) = kind { return s }
        return nil
    }

    /// What kind of YAML value this is, for "expected a mapping, found a list" messages.
    public var kindName: String {
        switch kind {
        case .scalar(let s, let quoted):
            if quoted { return "string" }
            switch PlainScalar(s) {
            case .null: return "null"
            case .bool: return "boolean"
            case .int: return "integer"
            case .double: return "number"
            case .string: return "string"
            }
        case .sequence: return "list"
        case .mapping: return "mapping"
        }
    }

    /// The request-attribute form of this node (plain scalars typed as YAML 1.2's core schema does).
    public var value: Value {
        switch kind {
        case .scalar(let s, let quoted):
            if quoted { return .string(s) }
            switch PlainScalar(s) {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            }
        case .sequence(let items): return .list(items.map(\.value))
        case .mapping(let entries):
            var map: [String: Value] = [:]
            for e in entries { map[e.key.text ?? ""] = e.value.value }
            return .map(map)
        }
    }
}

/// How a plain (unquoted) scalar reads under YAML 1.2's core schema.
public enum PlainScalar: Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)

    public init(_ text: String) {
        switch text {
        case "", "~", "null", "Null", "NULL": self = .null
        case "true", "True", "TRUE": self = .bool(true)
        case "false", "False", "FALSE": self = .bool(false)
        default:
            if let i = Int(text) {
                self = .int(i)
            } else if text.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true,
                      text.allSatisfy({ $0.isNumber || "+-.eE".contains($0) }), let d = Double(text)
            {
                self = .double(d)
            } else {
                self = .string(text)
            }
        }
    }
}

/// Reads one policy file into a located syntax tree, refusing unsafe or malformed input with diagnostics.
public enum YAMLLoader {
    /// Parses raw bytes; every problem (size, encoding, syntax, duplicate keys, aliases, depth) is a diagnostic.
    public static func load(bytes: [UInt8], path: String, limits: YAMLLimits = YAMLLimits()) -> (SourceFile?, SyntaxNode?, [Diagnostic]) {
        let start = SourceLocation(file: path, line: 1, column: 1)
        guard bytes.count <= limits.maxFileBytes else {
            return (nil, nil, [Diagnostic(
                .error, .fileTooLarge, "policy file is \(bytes.count) bytes, over the \(limits.maxFileBytes)-byte limit",
                at: start, help: ["split the policy set into several files"])])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let (line, column) = firstInvalidUTF8(bytes)
            return (nil, nil, [Diagnostic(
                .error, .invalidUTF8, "policy file is not valid UTF-8",
                at: SourceLocation(file: path, line: line, column: column),
                help: ["save the file as UTF-8"])])
        }
        let file = SourceFile(path: path, text: text)
        if bytes.contains(0) {  // in valid UTF-8 a zero byte is only ever U+0000
            return (file, nil, [Diagnostic(.error, .invalidUTF8, "policy file contains a NUL character", at: start)])
        }
        let unsafe = YAMLSafetyScanner.scan(file, limits: limits)
        if !unsafe.isEmpty { return (file, nil, unsafe) }

        let root: Node?
        do {
            // The basic resolver tags every plain scalar as a string: the loader reads only text and style, and the
            // default resolver's regular expressions (run again each time Yams hashes a key to find duplicates)
            // were a quarter of compile time.
            root = try Yams.compose(yaml: text, .basic)
        } catch let error as YamlError {
            return (file, nil, [diagnostic(for: error, path: path, file: file)])
        } catch {
            return (file, nil, [Diagnostic(.error, .yamlSyntax, "could not read YAML: \(error)", at: start)])
        }
        guard let root else {
            return (file, SyntaxNode(.mapping([]), at: start), [])
        }
        var budget = limits.maxNodes
        var diagnostics: [Diagnostic] = []
        let node = convert(root, file: file, depth: 0, limits: limits, budget: &budget, diagnostics: &diagnostics)
        return (file, diagnostics.isEmpty ? node : nil, diagnostics)
    }

    private static func convert(
        _ node: Node, file: SourceFile, depth: Int, limits: YAMLLimits, budget: inout Int, diagnostics: inout [Diagnostic]
    ) -> SyntaxNode {
        let location = file.location(line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
        budget -= 1
        if budget < 0 || depth > limits.maxDepth {
            if diagnostics.isEmpty {
                diagnostics.append(Diagnostic(
                    .error, budget < 0 ? .yamlTooLarge : .yamlTooDeep,
                    budget < 0 ? "policy file has more than \(limits.maxNodes) YAML nodes" : "nesting is deeper than \(limits.maxDepth) levels",
                    at: location))
            }
            return SyntaxNode(.scalar("", quoted: false), at: location)
        }
        if node.anchor != nil, diagnostics.isEmpty {
            diagnostics.append(Diagnostic(.error, .yamlAlias, "YAML anchors are not allowed in policy files", at: location))
        }
        switch node {
        case .scalar(let scalar):
            let quoted = scalar.style != .plain && scalar.style != .any
            switch scalar.style {
            case .singleQuoted, .doubleQuoted:
                var text = location
                text.column += 1
                return SyntaxNode(.scalar(scalar.string, quoted: true), at: location, textLocation: text)
            case .literal, .folded:
                // The text starts on the first non-blank line after the indicator, at that line's indentation.
                var line = location.line + 1
                while let content = file.line(line), content.allSatisfy({ $0 == " " }) { line += 1 }
                let column = (file.line(line)?.prefix { $0 == " " }.count ?? 0) + 1
                var node = SyntaxNode(
                    .scalar(scalar.string, quoted: true), at: location, textLocation: file.location(line: line, column: column),
                    continuationColumn: column)
                if scalar.style == .folded {
                    var lines: [Substring] = []
                    var n = line
                    while let content = file.line(n), content.prefix(column - 1).allSatisfy({ $0 == " " }),
                          content.count >= column || content.allSatisfy({ $0 == " " })
                    {
                        lines.append(content.dropFirst(column - 1))
                        n += 1
                    }
                    // Blank lines after the block belong to no scalar; keep them out of the condition's source.
                    while let last = lines.last, last.allSatisfy({ $0 == " " }) { lines.removeLast() }
                    node.unfoldedText = lines.joined(separator: "\n")
                }
                return node
            default:
                return SyntaxNode(.scalar(scalar.string, quoted: quoted), at: location)
            }
        case .sequence(let sequence):
            return SyntaxNode(.sequence(sequence.map {
                convert($0, file: file, depth: depth + 1, limits: limits, budget: &budget, diagnostics: &diagnostics)
            }), at: location)
        case .mapping(let mapping):
            return SyntaxNode(.mapping(mapping.map { key, value in
                SyntaxNode.Entry(
                    key: convert(key, file: file, depth: depth + 1, limits: limits, budget: &budget, diagnostics: &diagnostics),
                    value: convert(value, file: file, depth: depth + 1, limits: limits, budget: &budget, diagnostics: &diagnostics))
            }), at: location)
        case .alias:
            diagnostics.append(Diagnostic(.error, .yamlAlias, "YAML aliases are not allowed in policy files", at: location))
            return SyntaxNode(.scalar("", quoted: false), at: location)
        }
    }

    private static func diagnostic(for error: YamlError, path: String, file: SourceFile) -> Diagnostic {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(file: path, line: mark.line, column: mark.column) }
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
            var message = problem
            if let context { message = "\(problem) (\(context.text))" }
            return Diagnostic(.error, .yamlSyntax, "invalid YAML: \(message)", at: at(mark))
        case let .duplicatedKeysInMapping(duplicates, context):
            let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            // Yams marks the first of the two keys; the error belongs at the second, with the first as a note.
            let first = at(context.mark)
            guard let key = duplicates.first, let second = secondKey(key, after: first, in: file) else {
                return Diagnostic(
                    .error, .duplicateKey, "duplicate key \(names) in one mapping", at: first,
                    help: ["each key may appear once in a mapping; merge the two entries"])
            }
            return Diagnostic(
                .error, .duplicateKey, "duplicate key \(names) in one mapping", at: second, length: key.count,
                help: ["'\(key)' was first given at line \(first.line), column \(first.column): keep one of the two, or merge them"])
        case let .reader(problem, offset, _, _):
            return Diagnostic(.error, .yamlSyntax, "invalid YAML: \(problem)\(offset.map { " at byte \($0)" } ?? "")", at: SourceLocation(file: path, line: 1, column: 1))
        default:
            return Diagnostic(.error, .yamlSyntax, "invalid YAML: \(error)", at: SourceLocation(file: path, line: 1, column: 1))
        }
    }

    /// Where `key` appears again in the block mapping whose first `key` is at `first`: the next line at the same
    /// indentation that starts with it, before the mapping ends (a line indented less). Nil for flow mappings
    /// (`{a: 1, a: 2}`) and anything else this simple reading cannot place, which keep Yams' mark.
    static func secondKey(_ key: String, after first: SourceLocation, in file: SourceFile) -> SourceLocation? {
        let column = first.column
        var line = first.line + 1
        while let text = file.line(line) {
            let indent = text.prefix { $0 == " " }.count
            let rest = text.dropFirst(indent)
            if rest.isEmpty || rest.hasPrefix("#") {
                line += 1
                continue
            }
            if indent + 1 < column { return nil }
            if indent + 1 == column {
                for candidate in [key, "\"\(key)\"", "'\(key)'"] where rest.hasPrefix(candidate) {
                    let after = rest.dropFirst(candidate.count).drop { $0 == " " }
                    if after.hasPrefix(":") { return SourceLocation(file: first.file, line: line, column: column) }
                }
            }
            line += 1
        }
        return nil
    }

    private static func firstInvalidUTF8(_ bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1, lineStart = 0, i = 0
        while i < bytes.count {
            let b = bytes[i]
            let length: Int
            switch b {
            case 0..<0x80: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return (line, i - lineStart + 1)
            }
            if i + length > bytes.count { return (line, i - lineStart + 1) }
            if length > 1, String(validating: bytes[i..<(i + length)], as: UTF8.self) == nil {
                return (line, i - lineStart + 1)
            }
            if b == 0x0A { line += 1; lineStart = i + 1 }
            i += length
        }
        return (line, i - lineStart + 1)
    }
}
