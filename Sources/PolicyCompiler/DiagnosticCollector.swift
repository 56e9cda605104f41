import PolicyModel

/// Gathers the diagnostics of every pass so one run reports all problems, not just the first.
package struct DiagnosticCollector: Sendable {
    package private(set) var diagnostics: [Diagnostic] = []

    package init() {}

    package var hasErrors: Bool { diagnostics.hasErrors }

    package mutating func add(_ diagnostic: Diagnostic) { diagnostics.append(diagnostic) }

    package mutating func error(
        _ code: DiagnosticCode, _ message: String, at location: SourceLocation?, length: Int = 1, help: [String] = [],
        notes: [(SourceLocation?, String)] = []
    ) {
        diagnostics.append(Diagnostic(.error, code, message, at: location, length: length, help: help, notes: notes))
    }

    package mutating func warning(
        _ code: DiagnosticCode, _ message: String, at location: SourceLocation?, length: Int = 1, help: [String] = []
    ) {
        diagnostics.append(Diagnostic(.warning, code, message, at: location, length: length, help: help))
    }

    package mutating func append(contentsOf other: [Diagnostic]) { diagnostics.append(contentsOf: other) }
}
