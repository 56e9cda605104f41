import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

/// `policy`: check policy sets in CI, and decide requests from scripts.
public struct PolicyCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Gatehouse policy tool: check policy sets, decide requests, serve the HTTP API.",
        discussion: """
            Exit codes: 0 clean; 1 policy errors (a set does not load, or --strict warnings); 2 failing policy \
            tests, invariants or coverage minimum (diff --fail-on-widening: widening); 64 usage error; \
            decide/explain: 65 invalid request JSON.

            Documentation: docs/cli.md and docs/policy-language.md.
            """,
        version: GatehouseVersion.current,
        subcommands: [
            Check.self, Decide.self, Explain.self, Plan.self, Diff.self, Matrix.self, Serve.self, Schema.self, Version.self,
            Keygen.self, BundleCommand.self, Replay.self, LogCommand.self,
        ])

    public init() {}
}

/// Output formats of `diff` (text, json or markdown; github is refused there). `check` has `CheckFormat`, `explain` `ExplainFormat`.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, github, markdown
}

/// Exit codes shared by every subcommand (sysexits for usage).
enum Exit {
    static let policyErrors = ExitCode(1)
    /// Failing tests or invariants for `check`; widening for `diff --fail-on-widening`.
    static let failingTests = ExitCode(2)
}

func writeError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Loads one policy set for `decide`/`explain`, printing its errors and exiting 1 if it does not load.
func loadOrExit(_ directory: String) throws -> CompiledPolicy {
    try loadedOrExit(PolicyCompiler.load(directory: directory))
}

/// The compiled policy of a load result, or its errors on standard error and exit 1.
func loadedOrExit(_ result: PolicyLoadResult) throws -> CompiledPolicy {
    let renderer = DiagnosticRenderer(sources: result.sources)
    for d in result.diagnostics where d.severity == .error { writeError(renderer.text(d)) }
    guard let policy = result.policy else { throw Exit.policyErrors }
    return policy
}
