/// The lines of a source file, for quoting under a diagnostic (`PolicySyntax.SourceFile` is one).
public protocol SourceLines: Sendable {
    /// Line `n` (1-based) without its line break, or nil past the end.
    func line(_ n: Int) -> String?
}

/// Renders diagnostics for people (with the source line and a caret), for tools (JSON) and for CI annotations.
///
/// It lives beside `Diagnostic` so every front door (the CLI, the server's reload log) renders findings the same
/// way without importing the verification tools.
public struct DiagnosticRenderer: Sendable {
    /// The files quoted, by path.
    public let sources: [String: any SourceLines]

    /// A renderer quoting lines of `sources`.
    public init(sources: [String: some SourceLines]) {
        self.sources = sources.mapValues { $0 as any SourceLines }
    }

    /// `path:line:col: error: message [code]`, the quoted line, a caret, and help lines.
    public func text(_ d: Diagnostic) -> String {
        var out = ""
        if let location = d.location { out += "\(location): " }
        out += "\(d.severity.rawValue): \(d.message) [\(d.code)]"
        if let location = d.location, let line = sources[location.file]?.line(location.line) {
            let number = String(location.line)
            let gutter = String(repeating: " ", count: number.count)
            let caretColumn = max(0, min(location.column - 1, line.count))
            let prefix = String(line.prefix(caretColumn)).map { $0 == "\t" ? "\t" : " " }.joined()
            let underline = "^" + String(repeating: "~", count: max(0, min(d.length, line.count - caretColumn) - 1))
            out += "\n \(number) | \(line)\n \(gutter) | \(prefix)\(underline)"
        }
        for (location, note) in d.notes {
            out += "\n   = note: \(note)" + (location.map { " (\($0))" } ?? "")
        }
        for help in d.help { out += "\n   = help: \(help)" }
        return out
    }

    /// The diagnostic as JSON: severity, code, message, file, line, column, help and notes.
    public static func json(_ d: Diagnostic) -> JSONText {
        var fields: [JSONText.Field] = [
            .init("severity", .string(d.severity.rawValue)), .init("code", .string(d.code)), .init("message", .string(d.message)),
        ]
        if let l = d.location {
            fields += [.init("file", .string(l.file)), .init("line", .int(l.line)), .init("column", .int(l.column))]
        }
        if !d.help.isEmpty { fields.append(.init("help", .array(d.help.map { .string($0) }))) }
        if !d.notes.isEmpty {
            fields.append(.init("notes", .array(d.notes.map { location, text in
                .object([.init("message", .string(text))] + (location.map { [.init("location", .string($0.description))] } ?? []))
            })))
        }
        return .object(fields)
    }

    /// A GitHub Actions workflow command that annotates the file and line.
    public static func github(_ d: Diagnostic) -> String {
        let level = d.severity == .error ? "error" : d.severity == .warning ? "warning" : "notice"
        var properties: [String] = []
        if let l = d.location { properties += ["file=\(escapeProperty(l.file))", "line=\(l.line)", "col=\(l.column)"] }
        properties.append("title=\(escapeProperty(d.code))")
        let message = ([d.message] + d.help.map { "help: \($0)" }).joined(separator: "\n")
        return "::\(level) \(properties.joined(separator: ","))::\(escapeData(message))"
    }

    private static func escapeData(_ s: String) -> String {
        s.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
    }

    private static func escapeProperty(_ s: String) -> String {
        escapeData(s).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }
}
