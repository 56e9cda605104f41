import PolicyModel
import Testing
@testable import PolicyVerification

/// The findings `policy check --format github` annotates beyond the lints: each renders its data as the goldens show
/// (`CLIGolden/check-failing`, `check-passing` test them end to end).
@Suite struct CheckFindingTests {
    static let here = SourceLocation(file: "app.yaml", line: 14, column: 5)

    @Test func testFailedJoinsItsFailuresAndShowsControlCharacters() {
        let result = PolicyTestResult(name: "bell \u{7}", location: Self.here, failures: ["decision: a", "reason: b"], decision: nil)
        let finding = TestFailed(test: result)
        #expect(finding.message == "policy test 'bell \\u{7}' failed: decision: a; reason: b")
        #expect(finding.diagnostic.code == "test-failed" && finding.diagnostic.severity == .error && finding.diagnostic.location == Self.here)
    }

    @Test func invariantFailedWithoutACounterexampleHasNoHelp() {
        let finding = InvariantFailed(invariant: InvariantResult(name: "i", location: Self.here, checked: 3, counterexample: nil))
        #expect(finding.message == "invariant 'i' does not hold")
        #expect(finding.help.isEmpty && finding.diagnostic.code == "invariant-failed")
    }

    @Test func uncoveredIsANoteAtTheItem() {
        let finding = Uncovered(item: CoverageItem(kind: .rule, name: "deny rule r", location: Self.here, covered: false))
        #expect(finding.message == "deny rule r: not exercised by any policy test")
        #expect(finding.diagnostic.severity == .note && finding.diagnostic.code == "uncovered" && finding.diagnostic.location == Self.here)
    }

    @Test func coverageBelowMinimumNamesTheSetAndPointsNowhere() {
        let finding = CoverageBelowMinimum(path: "sets/app", percent: 50, minimum: 80)
        #expect(finding.message == "sets/app: coverage \(Coverage.format(50)) is below the minimum of 80%")
        #expect(finding.diagnostic.location == nil && finding.diagnostic.code == "coverage-below-minimum")
    }
}
