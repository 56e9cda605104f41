import Foundation
import Testing
import GatehouseTestSupport

/// The shell completions and the man page in the repository are what swift-argument-parser makes of `policy` now
/// (scripts/generate-completions-and-manual.sh writes them).
@Suite(.startsServers) struct CompletionAndManualTests {
    @Test(arguments: ["bash", "zsh", "fish"])
    func theCommittedCompletionIsTheToolsOwn(_ shell: String) async throws {
        let generated = try await CLITests.run(["--generate-completion-script", shell])
        #expect(generated.status == 0)
        let committed = try String(contentsOf: CLITests.root.appendingPathComponent("completions/policy.\(shell)"), encoding: .utf8)
        #expect(committed == generated.out, "completions/policy.\(shell) is stale: run scripts/generate-completions-and-manual.sh")
    }

    /// The manual carries its generation date, so it is compared by content: every subcommand and every option of
    /// `policy serve` is in it.
    @Test func theManualNamesEveryCommandAndServeOption() async throws {
        let manual = try String(contentsOf: CLITests.root.appendingPathComponent("docs/man/policy.1"), encoding: .utf8)
        for command in ["check", "decide", "explain", "diff", "matrix", "serve", "schema", "version", "keygen", "bundle"] {
            #expect(manual.contains(command), "docs/man/policy.1 does not name '\(command)': run scripts/generate-completions-and-manual.sh")
        }
        let help = try await CLITests.run(["serve", "--help"]).out
        for option in Set(help.matches(of: /--([a-z][a-z0-9-]+)/).map { String($0.output.1) }) where option != "help" {
            #expect(manual.contains(option), "docs/man/policy.1 lacks serve's --\(option): run scripts/generate-completions-and-manual.sh")
        }
    }
}
