import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

/// `policy`: check policy sets in CI, and decide requests from scripts.
public struct PolicyCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Gatehouse policy tool: check policy sets and decide requests.",
        discussion: """
            Exit codes: 0 clean; 1 policy errors (the set does not load); 2 failing policy tests; 64 usage error.
            Documentation: docs/cli.md and docs/policy-language.md.
            """,
        subcommands: [Check.self, Decide.self, Explain.self, Diff.self])

    public init() {}
}

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, github
}

/// Exit codes shared by every subcommand (sysexits for usage).
enum Exit {
    static let policyErrors = ExitCode(1)
    static let failingTests = ExitCode(2)
}

func writeError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Loads one policy set for `decide`/`explain`, printing its errors and exiting 1 if it does not load.
func loadOrExit(_ directory: String) throws -> CompiledPolicy {
    let result = PolicyCompiler.load(directory: directory)
    let renderer = DiagnosticRenderer(sources: result.sources)
    for d in result.diagnostics where d.severity == .error { writeError(renderer.text(d)) }
    guard let policy = result.policy else { throw Exit.policyErrors }
    return policy
}
