/// A problem found in a policy set: where, how bad, a stable code, and what to do about it.
///
/// Finding and rendering are separate: passes produce `Diagnostic` values, and
/// `DiagnosticRenderer` turns them into text, JSON or CI annotations.
public struct Diagnostic: Sendable, Hashable {
    /// How bad a diagnostic is: an error stops a set from loading, a warning does not.
    public enum Severity: String, Sendable, Hashable, Comparable {
        /// The severities, most serious first.
        case error, warning, note

        /// Orders errors before warnings before notes.
        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
        private var rank: Int {
            switch self {
            case .error: 0
            case .warning: 1
            case .note: 2
            }
        }
    }

    /// Error, warning or note.
    public var severity: Severity
    /// What kind of problem this is; its registry entry has the one-line summary.
    public var kind: DiagnosticCode
    /// Stable kebab-case code such as `unknown-tier`; CI filters and docs key on it.
    public var code: String { kind.rawValue }
    /// What is wrong, in one sentence.
    public var message: String
    /// Where; nil for a problem with no single place.
    public var location: SourceLocation?
    /// How many columns the caret underline spans (at least 1).
    public var length: Int
    /// Suggestions such as "did you mean 'pro'?".
    public var help: [String]
    /// Related places, e.g. the first declaration of a duplicate.
    public var notes: [(SourceLocation?, String)]

    /// A diagnostic; `length` is clamped to at least 1.
    public init(
        _ severity: Severity, _ kind: DiagnosticCode, _ message: String, at location: SourceLocation?, length: Int = 1,
        help: [String] = [], notes: [(SourceLocation?, String)] = []
    ) {
        self.severity = severity
        self.kind = kind
        self.message = message
        self.location = location
        self.length = max(1, length)
        self.help = help
        self.notes = notes
    }

    /// Equal when every field, notes included, is equal.
    public static func == (a: Diagnostic, b: Diagnostic) -> Bool {
        a.severity == b.severity && a.kind == b.kind && a.message == b.message && a.location == b.location
            && a.length == b.length && a.help == b.help && a.notes.map(\.1) == b.notes.map(\.1)
            && a.notes.map(\.0) == b.notes.map(\.0)
    }

    /// Hashes the code, message and location.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
        hasher.combine(location)
    }
}

extension Array where Element == Diagnostic {
    /// Whether any diagnostic is an error.
    public var hasErrors: Bool { contains { $0.severity == .error } }

    /// Diagnostics in reading order: by file, line, column, then severity.
    public func sortedForDisplay() -> [Diagnostic] {
        enumerated().sorted { x, y in
            let (a, b) = (x.element, y.element)
            switch (a.location, b.location) {
            case let (l?, r?) where l != r: return l < r
            case (nil, _?): return false
            case (_?, nil): return true
            default: return a.severity == b.severity ? x.offset < y.offset : a.severity < b.severity
            }
        }.map(\.element)
    }
}

/// Suggests the known name closest to a misspelt one ("did you mean ...?").
public enum Suggestion {
    /// The candidate within a small edit distance of `name`, if any.
    public static func closest(to name: String, in candidates: some Sequence<String>) -> String? {
        let limit = max(1, name.count / 3)
        var best: (String, Int)?
        for candidate in candidates {
            let d = editDistance(name.lowercased(), candidate.lowercased())
            if d <= limit, d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// A "did you mean" help line plus the list of what is known, for a diagnostic.
    public static func help(for name: String, kind: String, known: [String]) -> [String] {
        var lines: [String] = []
        let list = known.isEmpty ? "none are declared" : "Known \(kind): \(known.joined(separator: ", "))"
        if let match = closest(to: name, in: known) {
            lines.append("did you mean '\(match)'? \(list)")
        } else {
            lines.append(list)
        }
        return lines
    }

    /// Edit distance counting insertions, deletions, substitutions and swaps of neighbours ("dney" -> "deny" is 1).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = Swift.min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
