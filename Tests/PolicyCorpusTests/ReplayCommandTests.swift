import Foundation
import Testing
import GatehouseTestSupport

/// `policy replay` as a CI step runs it: the shipped sample, a lowered limit, the gate, formats, bad input.
@Suite(.startsServers) struct ReplayCommandTests {
    static let sample = "examples/ci/decisions/research-crawler.jsonl"

    /// A copy of research-crawler with the free sources limit at 40.
    static func lowered() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-replay-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: CLITests.root.appendingPathComponent("policies/research-crawler"), to: dir)
        let tiers = dir.appendingPathComponent("tiers.yaml")
        try Data(try String(contentsOf: tiers, encoding: .utf8).replacingOccurrences(of: "free: 50", with: "free: 40").utf8).write(to: tiers)
        return dir
    }

    @Test func theShippedSampleReplaysCleanAndTheLoweredLimitFailsTheGate() async throws {
        let same = try await CLITests.run(["replay", Self.sample, "--policies", "policies/research-crawler", "--fail-on", "any"])
        #expect(same.status == 0 && same.out.contains("replayed 600 of 600") && same.out.contains("no decision changes"), "\(same)")

        let dir = try Self.lowered()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gated = try await CLITests.run(["replay", Self.sample, "--policies", dir.path, "--fail-on", "allow-to-deny"])
        #expect(gated.status == 2 && gated.out.contains("17 decisions change"), "\(gated)")
        let json = try await CLITests.run(["replay", Self.sample, "--policies", dir.path, "--format", "json"])
        #expect(json.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect((object["flips"] as? [String: Any])?["allowToDeny"] as? Int == 17)
        let markdown = try await CLITests.run(["replay", Self.sample, "--policies", dir.path, "--format", "markdown"])
        #expect(markdown.out.hasPrefix("### Replay of recorded decisions"))
    }

    @Test func badInputIsNamed() async throws {
        let missing = try await CLITests.run(["replay", "no-such-file.jsonl", "--policies", "policies/research-crawler"])
        #expect(missing.status == 64 && missing.err.contains("no-such-file.jsonl"), "\(missing)")
        let garbage = try await CLITests.run(["replay", "-", "--policies", "policies/research-crawler"], input: "{\"effect\": \"maybe\"}\n")
        #expect(garbage.status == 0 && garbage.out.contains("-:1: effect"), "\(garbage)")
        let format = try await CLITests.run(["replay", Self.sample, "--policies", "policies/research-crawler", "--format", "github"])
        #expect(format.status == 64)
    }
}
