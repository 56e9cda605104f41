import PolicyEngine
import PolicyModel
import PolicySyntax

/// A value read from a policy file together with where it was written.
package struct Located<Wrapped: Sendable & Hashable>: Sendable, Hashable {
    package var value: Wrapped
    package var location: SourceLocation
    /// Columns the value spans on its line, for the caret underline.
    package var length: Int

    package init(_ value: Wrapped, at location: SourceLocation, length: Int = 1) {
        self.value = value
        self.location = location
        self.length = max(1, length)
    }
}

/// Typed reads from syntax nodes; each mismatch becomes a diagnostic naming what was expected.
struct NodeReader {
    var diagnostics = DiagnosticCollector()

    mutating func mapping(_ node: SyntaxNode, _ what: String) -> [SyntaxNode.Entry]? {
        if case .mapping(let entries) = node.kind { return entries }
        if case .scalar(let text, false) = node.kind, PlainScalar(text) == .null { return [] }
        typeError(node, expected: "a mapping", what)
        return nil
    }

    mutating func sequence(_ node: SyntaxNode, _ what: String) -> [SyntaxNode]? {
        if case .sequence(let items) = node.kind { return items }
        typeError(node, expected: "a list", what)
        return nil
    }

    mutating func string(_ node: SyntaxNode, _ what: String) -> Located<String>? {
        guard case .scalar(let text, let quoted) = node.kind, quoted || PlainScalar(text) != .null else {
            typeError(node, expected: "a string", what)
            return nil
        }
        return Located(text, at: node.location, length: displayLength(node, text))
    }

    mutating func name(_ node: SyntaxNode, _ what: String) -> Located<String>? {
        guard let s = string(node, what) else { return nil }
        if s.value.isEmpty {
            diagnostics.error(.invalidName, "\(what) must not be empty", at: s.location)
            return nil
        }
        return s
    }

    mutating func bool(_ node: SyntaxNode, _ what: String) -> Located<Bool>? {
        if case .scalar(let text, false) = node.kind, case .bool(let b) = PlainScalar(text) {
            return Located(b, at: node.location, length: text.count)
        }
        typeError(node, expected: "true or false", what)
        return nil
    }

    mutating func integer(_ node: SyntaxNode, _ what: String) -> Located<Int>? {
        if case .scalar(let text, false) = node.kind, case .int(let i) = PlainScalar(text) {
            return Located(i, at: node.location, length: text.count)
        }
        typeError(node, expected: "an integer", what)
        return nil
    }

    /// A list of names; a single name is accepted as a list of one.
    mutating func names(_ node: SyntaxNode, _ what: String) -> [Located<String>]? {
        switch node.kind {
        case .sequence(let items): return items.compactMap { name($0, what) }
        case .scalar: return name(node, what).map { [$0] }
        case .mapping:
            typeError(node, expected: "a list of names", what)
            return nil
        }
    }

    /// A duration such as `5m`, `1h30m`, `90s`, in seconds.
    mutating func duration(_ node: SyntaxNode, _ what: String) -> Located<Double>? {
        guard let text = string(node, what) else { return nil }
        guard let seconds = DurationText.seconds(text.value) else {
            diagnostics.error(
                .invalidDuration, "invalid duration '\(text.value)' for \(what)", at: text.location, length: text.length,
                help: ["write a number with a unit: 30s, 5m, 1h, 1h30m"])
            return nil
        }
        return Located(seconds, at: text.location, length: text.length)
    }

    /// Reports keys of `entries` outside `allowed`, with a did-you-mean.
    mutating func rejectUnknownKeys(_ entries: [SyntaxNode.Entry], allowed: [String], in what: String) {
        for entry in entries {
            guard let key = entry.key.text else {
                typeError(entry.key, expected: "a string key", what)
                continue
            }
            if !allowed.contains(key) {
                diagnostics.error(
                    .unknownKey, "unknown key '\(key)' in \(what)", at: entry.key.location, length: key.count,
                    help: Suggestion.help(for: key, kind: "keys", known: allowed))
            }
        }
    }

    mutating func typeError(_ node: SyntaxNode, expected: String, _ what: String) {
        diagnostics.error(
            .wrongType, "expected \(expected) for \(what), found \(node.kindName)", at: node.location,
            length: node.text.map { displayLength(node, $0) } ?? 1, help: Self.fix(expected: expected, found: node))
    }

    /// How to write the value the reader expected, for the help line of a wrong-type error.
    static func fix(expected: String, found node: SyntaxNode) -> [String] {
        switch expected {
        case "true or false": return ["write true or false, unquoted (YAML reads yes, no, on and off as text here)"]
        case "an integer": return ["write a whole number, unquoted, e.g. 50"]
        case "a list of names": return ["write a list, `[a, b]`, or a single name"]
        case "a string", "a condition string":
            if case .mapping = node.kind { return ["quote the text: a ': ' or '{' inside unquoted text starts a mapping"] }
            return ["write the text, quoted if it holds ':', '#', '{' or '['"]
        default: return []
        }
    }

    private func displayLength(_ node: SyntaxNode, _ text: String) -> Int {
        if case .scalar(_, true) = node.kind, !text.contains("\n") { return text.count + 2 }
        return text.contains("\n") ? 1 : text.count
    }
}

extension [SyntaxNode.Entry] {
    /// The value under `key`, if present.
    func value(_ key: String) -> SyntaxNode? { first { $0.key.text == key }?.value }

    /// The key node of `key`, for locating the declaration.
    func keyNode(_ key: String) -> SyntaxNode? { first { $0.key.text == key }?.key }
}
