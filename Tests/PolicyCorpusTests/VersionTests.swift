import Foundation
import PolicyModel
import Testing
import GatehouseTestSupport

/// The version is written once (`GatehouseVersion`); the CLI, the JSON form and CHANGELOG.md agree with it.
@Suite(.startsServers) struct VersionTests {
    @Test func versionFlagPrintsTheVersion() async throws {
        let result = try await CLITests.run(["--version"])
        #expect(result.status == 0)
        #expect(result.out.trimmingCharacters(in: .whitespacesAndNewlines) == GatehouseVersion.current)
    }

    @Test func versionJSONNamesTheCommitAndBuildDate() async throws {
        let result = try await CLITests.run(["version", "--format", "json"])
        #expect(result.status == 0, "\(result.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: String])
        #expect(object["version"] == GatehouseVersion.current)
        let commit = try #require(object["commit"])
        // A clone builds with its commit; an export without .git says so rather than inventing one.
        #expect(commit == "unknown" || (commit.count == 40 && commit.allSatisfy(\.isHexDigit)), "\(commit)")
        #expect(ISO8601DateFormatter().date(from: object["buildDate"] ?? "") != nil)
        let text = try await CLITests.run(["version"])
        #expect(text.out.hasPrefix("policy \(GatehouseVersion.current) (commit \(commit), built "))
    }

    @Test func changelogsNewestReleaseIsTheVersion() throws {
        let changelog = try String(contentsOf: CLITests.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") && !$0.hasPrefix("## Unreleased") }
        let newest = try #require(releases.first)
        #expect(newest.hasPrefix("## \(GatehouseVersion.current) - "), "CHANGELOG.md's newest release is '\(newest)'")
        #expect(FileManager.default.fileExists(atPath: CLITests.root.appendingPathComponent("LICENSE").path))
    }
}
