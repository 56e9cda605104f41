import Foundation
import Testing
import GatehouseTestSupport

/// A pull request that adds a policy set: `policy diff --base` compares it with an empty set, and the shipped
/// GitHub workflow's shell steps, run as written in a repository shaped like a checkout of that pull request, pass.
@Suite(.startsServers) struct NewSetCITests {
    /// A git repository whose `origin/main` holds `policies/research-crawler` and whose HEAD adds
    /// `policies/mimisupply`.
    func pullRequestAddingASet() async throws -> URL {
        let repo = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-newset-\(UUID().uuidString)")
        let policies = repo.appendingPathComponent("policies")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: CLITests.root.appendingPathComponent("policies/research-crawler"), to: policies.appendingPathComponent("research-crawler"))
        try await Self.git(["init", "-q"], in: repo)
        try await Self.git(["add", "."], in: repo)
        try await Self.git(["commit", "-qm", "base"], in: repo)
        try await Self.git(["update-ref", "refs/remotes/origin/main", "HEAD"], in: repo)
        try FileManager.default.copyItem(
            at: CLITests.root.appendingPathComponent("policies/mimisupply"), to: policies.appendingPathComponent("mimisupply"))
        try await Self.git(["add", "."], in: repo)
        try await Self.git(["commit", "-qm", "add mimisupply"], in: repo)
        return repo
    }

    /// Runs git in `repo` with a throwaway identity, expecting success.
    @discardableResult
    static func git(_ arguments: [String], in repo: URL) async throws -> Int32 {
        let run = try await Program(path: "/usr/bin/env", ["git", "-C", repo.path, "-c", "user.name=t", "-c", "user.email=t@example.com"] + arguments).run()
        #expect(run.status == 0, "git \(arguments)")
        return run.status
    }

    @Test func aSetMissingAtTheBaseIsComparedWithAnEmptySet() async throws {
        let repo = try await pullRequestAddingASet()
        defer { try? FileManager.default.removeItem(at: repo) }
        let set = repo.appendingPathComponent("policies/mimisupply").path
        let shown = try await CLITests.run(["diff", "--base", "origin/main", set, "--format", "json"], in: repo)
        #expect(shown.status == 0, "\(shown.err)")
        #expect(shown.err.contains("has no policy files at origin/main: compared against an empty set"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.out.utf8)) as? [String: Any])
        let widening = try #require(object["widening"] as? Int)
        #expect(widening > 0)
        let changes = try #require(object["changes"] as? [[String: Any]])
        for change in changes {
            // The empty set decided every request the same way: nothing is declared, so nothing is allowed.
            let from = change["from"] as? [String: String]
            #expect(from == ["decision": "deny", "reason": "default_deny"], "\(change)")
        }

        let gated = try await CLITests.run(["diff", "--base", "origin/main", set, "--fail-on-widening"], in: repo)
        #expect(gated.status == 2, "a new set still widens: the gate fails when asked")
    }

    /// The `run:` steps of examples/ci/github-actions.yml, with the built tool at `.build/release/policy` as the
    /// build step leaves it; steps that use an action (checkout, upload, comment) are GitHub's, not ours.
    @Test func theShippedWorkflowPassesOnAPullRequestThatAddsASet() async throws {
        let repo = try await pullRequestAddingASet()
        defer { try? FileManager.default.removeItem(at: repo) }
        let release = repo.appendingPathComponent(".build/release")
        try FileManager.default.createDirectory(at: release, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: release.appendingPathComponent("policy"), withDestinationURL: CLITests.binary)
        let home = repo.appendingPathComponent(".home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)

        let workflow = try String(contentsOf: CLITests.root.appendingPathComponent("examples/ci/github-actions.yml"), encoding: .utf8)
        let steps = Self.runSteps(workflow).filter { !$0.script.contains("swift build") }
        #expect(steps.map(\.name).contains("Decisions this change widens"))
        for step in steps {
            let run = try await Program(
                path: "/bin/bash", ["-e", "-c", step.script],
                environment: .only([
                    "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": home.path,
                    "GITHUB_WORKSPACE": repo.path, "GITHUB_STEP_SUMMARY": repo.appendingPathComponent("summary.md").path,
                ]), in: repo
            ).run(errors: .mergedIntoOutput)
            let text = run.standardOutput
            #expect(run.status == 0, "step '\(step.name)' failed: \(text.suffix(2000))")
            if step.name == "Decisions this change widens" { #expect(text.contains("policies/mimisupply is new in this pull request")) }
        }
    }

    /// Each step's `name:` and `run:` script (one line, or a `|` block) of a workflow, by indentation.
    static func runSteps(_ workflow: String) -> [(name: String, script: String)] {
        var steps: [(name: String, script: String)] = []
        var name = ""
        let lines = workflow.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        while i < lines.count {
            let line = lines[i]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("- name:") { name = String(trimmed.dropFirst("- name:".count)).trimmingCharacters(in: .whitespaces) }
            if trimmed.hasPrefix("run:") {
                let rest = trimmed.dropFirst("run:".count).trimmingCharacters(in: .whitespaces)
                if rest == "|" {
                    let indent = line.prefix { $0 == " " }.count
                    var body: [String] = []
                    i += 1
                    while i < lines.count, lines[i].trimmingCharacters(in: .whitespaces).isEmpty || lines[i].prefix { $0 == " " }.count > indent {
                        body.append(String(lines[i].dropFirst(min(indent + 2, lines[i].count))))
                        i += 1
                    }
                    steps.append((name, body.joined(separator: "\n")))
                    continue
                }
                steps.append((name, rest))
            }
            i += 1
        }
        return steps
    }
}
