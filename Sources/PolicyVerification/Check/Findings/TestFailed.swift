import PolicyModel

/// `test-failed`: a policy test of the set's `tests:` did not get the decision it expects.
///
/// Each expectation that did not hold is one failure line (`PolicyTestRunner`); the annotation joins them, so a pull
/// request shows the whole story at the test. Control characters are shown, never written (`visible`).
struct TestFailed: Sendable {
    static let code = DiagnosticCode.testFailed
    /// The test that failed, with its failure lines.
    let test: PolicyTestResult

    var message: String { visible("policy test '\(test.name)' failed: " + test.failures.joined(separator: "; ")) }
    /// The finding as `policy check --format github` annotates it.
    var diagnostic: Diagnostic { Diagnostic(.error, Self.code, message, at: test.location) }
}
