import PolicyModel

/// `coverage-below-minimum`: the share of items the policy tests exercise is under `--min-coverage`.
///
/// It is about the whole set, so it points at no line: the message names the set's folder.
struct CoverageBelowMinimum: Sendable {
    static let code = DiagnosticCode.coverageBelowMinimum
    /// The set's folder, as given.
    let path: String
    /// The coverage measured, in percent.
    let percent: Double
    /// The minimum asked for, in percent.
    let minimum: Double

    var message: String { "\(path): coverage \(Coverage.format(percent)) is below the minimum of \(formatMinimum(minimum))" }
    /// The finding as `policy check --format github` annotates it.
    var diagnostic: Diagnostic { Diagnostic(.error, Self.code, message, at: nil) }
}
