import PolicyServer
import PolicyVerification

extension PolicyChecks {
    /// PolicyVerification's policy-test runner and decision matrix, which `policy serve` hands the server at start-up
    /// (the server does not import PolicyVerification).
    package static let verification = PolicyChecks(
        failingTests: PolicyTestRunner.failureLines, matrixPage: { MatrixHTML.page(DecisionMatrix(policy: $0), title: $1) })
}
