import Foundation
import Testing
import GatehouseTestSupport

/// `policy diff` end to end: two folders, a git revision, JSON, and the widening gate.
@Suite(.startsServers) struct DiffCLITests {
    func copyOfResearchCrawler() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = CLITests.root.appendingPathComponent("policies/research-crawler")
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: dir.appendingPathComponent(name))
        }
        return dir
    }

    func edit(_ file: URL, _ from: String, _ to: String) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains(from))
        try text.replacingOccurrences(of: from, with: to).write(to: file, atomically: true, encoding: .utf8)
    }

    @Test func wideningFailsTheGateOnlyWhenAsked() async throws {
        let dir = try copyOfResearchCrawler()
        defer { try? FileManager.default.removeItem(at: dir) }
        try edit(dir.appendingPathComponent("projects.yaml"), "grants: [edit]}", "grants: [edit, delete]}")

        let plain = try await CLITests.run(["diff", "policies/research-crawler", dir.path])
        #expect(plain.status == 0, "\(plain.err)")
        #expect(plain.out.contains("+ WIDENING: subject signed in, role editor gains 'delete' on project: deny (owner_only) -> allow"))

        let gated = try await CLITests.run(["diff", "--fail-on-widening", "policies/research-crawler", dir.path])
        #expect(gated.status == 2)

        let narrowing = try await CLITests.run(["diff", "--fail-on-widening", dir.path, "policies/research-crawler"])
        #expect(narrowing.status == 0)
        #expect(narrowing.out.contains("- narrowing: subject signed in, role editor loses 'delete' on project"))

        let json = try await CLITests.run(["diff", "--format", "json", "policies/research-crawler", dir.path])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let changes = try #require(object["changes"] as? [[String: Any]])
        let widening = try #require(changes.first { $0["widening"] as? Bool == true })
        #expect(widening["action"] as? String == "delete")
        #expect((widening["where"] as? [String: [String]])?["role"] == ["editor"])
        #expect((widening["example"] as? [String: Any])?["action"] as? String == "delete")
    }

    @Test func baseComparesWithTheFolderAtAGitRevision() async throws {
        let repo = try copyOfResearchCrawler()
        defer { try? FileManager.default.removeItem(at: repo) }
        func git(_ args: [String]) async throws { try await NewSetCITests.git(args, in: repo) }
        try await git(["init", "-q"])
        try await git(["add", "."])
        try await git(["commit", "-qm", "base"])
        try edit(repo.appendingPathComponent("tiers.yaml"), "    tiers: [team]", "    tiers: [pro, team]")

        let result = try await CLITests.run(["diff", "--base", "HEAD", "--fail-on-widening", repo.path])
        #expect(result.status == 2, "\(result.out)\(result.err)")
        #expect(result.out.contains("subject pro gains 'collaboration' on app"))

        let bad = try await CLITests.run(["diff", "--base", "no-such-revision", repo.path])
        #expect(bad.status == 64)
        #expect(bad.err.contains("git ls-tree failed"))
    }

    @Test func aVersionThatDoesNotLoadExitsOneAndSaysWhere() async throws {
        let dir = try copyOfResearchCrawler()
        defer { try? FileManager.default.removeItem(at: dir) }
        try edit(dir.appendingPathComponent("tiers.yaml"), "    tiers: [team]", "    tiers: [teem]")
        let result = try await CLITests.run(["diff", "policies/research-crawler", dir.path])
        #expect(result.status == 1)
        #expect(result.out.isEmpty)
        #expect(result.err.contains("tiers.yaml:32:13: error: unknown tier 'teem'"), "\(result.err)")
        #expect(result.err.contains("\(dir.path): does not load"))
    }

    @Test func usageErrorsExit64() async throws {
        #expect(try await CLITests.run(["diff", "policies/research-crawler"]).status == 64)
        #expect(try await CLITests.run(["diff", "--base", "HEAD", "a", "b"]).status == 64)
        #expect(try await CLITests.run(["diff", "--format", "github", "a", "b"]).status == 64)
    }
}
