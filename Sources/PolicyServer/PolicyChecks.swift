import PolicyCompiler
import PolicyEngine

/// The verification work the server runs but does not own, handed in by the program that starts it: `policy serve`
/// passes PolicyVerification's (`PolicyChecks.verification` in PolicyCLI), so the server links no policy-test runner,
/// matrix or prover and stays a thin layer over the facade.
public struct PolicyChecks: Sendable {
    /// One line per failing policy test of a loaded set (`file:line:col: error: policy test 'name' fails: ...`), empty
    /// when every test passes: a strict reload (`--strict-reload`) refuses a set with any.
    public var failingTests: @Sendable (PolicyLoadResult) -> [String]
    /// The decision matrix of a policy as a standalone HTML page with this title; `/playground` adds its editor.
    public var matrixPage: @Sendable (CompiledPolicy, _ title: String) -> String

    public init(
        failingTests: @escaping @Sendable (PolicyLoadResult) -> [String], matrixPage: @escaping @Sendable (CompiledPolicy, _ title: String) -> String
    ) {
        self.failingTests = failingTests
        self.matrixPage = matrixPage
    }
}
