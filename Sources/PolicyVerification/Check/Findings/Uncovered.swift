import PolicyModel

/// `uncovered`: a rule, requirement or message that no policy test exercises (`policy check --coverage`).
///
/// A note, not a warning: coverage is a measure the set's authors choose to keep; `--min-coverage` turns the total into
/// a gate (`CoverageBelowMinimum`).
struct Uncovered: Sendable {
    static let code = DiagnosticCode.uncovered
    /// The item no test reached.
    let item: CoverageItem

    var message: String { "\(item.name): not exercised by any policy test" }
    /// The finding as `policy check --format github` annotates it.
    var diagnostic: Diagnostic { Diagnostic(.note, Self.code, message, at: item.location) }
}
