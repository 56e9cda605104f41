import Foundation
import GatehouseTestSupport
import Testing

/// The curl walk-throughs in `examples/walkthroughs/`, each against a live server of its policy set;
/// every answer is checked by the script itself (it exits non-zero at the first one that differs).
@Suite(.startsServers) struct WalkthroughTests {
    static let operatorToken = "walkthrough-operator-token-0001"

    @Test(arguments: ["research-crawler", "contacasal", "mimisupply"])
    func walkthrough(_ set: String) async throws {
        let t = try TestServer(policySet: set)
        let (process, url) = try await ServedProcess.start(
            ["--policies", t.policies.path, "--database", t.dir.appendingPathComponent("walk.sqlite").path],
            environment: ["GATEHOUSE_OPERATOR_TOKEN": Self.operatorToken])
        defer { process.kill() }
        let (status, text) = try await ExternalTool.run(
            "/bin/bash", [TestServer.root.appendingPathComponent("examples/walkthroughs/\(set).sh").path],
            environment: [
                "GATEHOUSE_URL": url.absoluteString, "GATEHOUSE_OPERATOR": Self.operatorToken,
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            ])
        #expect(status == 0, "\(text)")
        #expect(text.contains("\(set): ok"))
        try await ServedProcess.stop(process)
    }
}

/// docs/server.md's walk-through: its `sh` blocks, in order, as one bash script with `set -e`, against a live
/// server of the research-crawler set. Every `curl -f` fails the script on an error status.
@Suite(.startsServers) struct ServerWalkthroughDocTests {
    static func blocks() throws -> [String] {
        let text = try String(contentsOf: TestServer.root.appendingPathComponent("docs/server.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## Walk-through: one curl session per route group"))
        let section = text[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        return section[..<end].components(separatedBy: "```sh\n").dropFirst().compactMap { $0.components(separatedBy: "\n```").first }
    }

    @Test func everyRouteGroupBlockRunsAgainstALiveServer() async throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 6)
        let t = try TestServer()
        let (process, url) = try await ServedProcess.start(
            ["--policies", t.policies.path, "--database", t.dir.appendingPathComponent("walk-doc.sqlite").path],
            environment: ["GATEHOUSE_OPERATOR_TOKEN": WalkthroughTests.operatorToken])
        defer { process.kill() }
        let base = url.absoluteString.hasSuffix("/") ? String(url.absoluteString.dropLast()) : url.absoluteString
        // The doc's BASE names the default address; the test's server has its own port.
        let body = blocks.joined(separator: "\n").replacingOccurrences(of: "BASE=http://127.0.0.1:8080", with: "BASE=\(base)")
        let (status, text) = try await ExternalTool.run(
            "/bin/bash", ["-e", "-o", "pipefail", "-c", body],
            environment: [
                "GATEHOUSE_OPERATOR_TOKEN": WalkthroughTests.operatorToken,
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            ])
        #expect(status == 0, "\(text)")
        for expected in ["ok", "research-crawler", "pin", "requires_upgrade", "walker", "minimal", "allow"] {
            #expect(text.contains(expected), "the walk-through printed no '\(expected)':\n\(text)")
        }
        try await ServedProcess.stop(process)
    }
}
