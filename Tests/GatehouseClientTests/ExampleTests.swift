import Foundation
import Testing
import GatehouseTestSupport

/// examples/client runs against a live server and prints what its README says it prints.
@Suite(.startsServers) struct ExampleTests {
    @Test func theCommandLineExampleRunsAgainstALiveServer() async throws {
        try await withServer("research-crawler") { server in
            let run = try await Program(
                LiveServer.binary("gatehouse-client-example"), [server.url.absoluteString, "--username", "example.reader", "--pin", "604917"]
            ).run()
            let text = run.standardOutput
            #expect(run.status == 0, "\(text)")
            let lines = text.split(separator: "\n").map(String.init)
            #expect(lines.first == "signed out, ai_suggestions: deny (requires_upgrade) AI Suggestions requires Pro. Upgrade to unlock.")
            #expect(lines.contains { $0.hasPrefix("anonymous session: ") })
            #expect(lines.contains { $0.hasPrefix("registered example.reader as ") && $0.hasSuffix(", tier free") })
            #expect(lines.contains("add_source: allow (allowed)"))
            #expect(lines.contains("ai_suggestions: deny (requires_upgrade) AI Suggestions requires Pro. Upgrade to unlock."))
            #expect(lines.contains("cloud_sync: deny (requires_upgrade) Cloud Sync requires Pro. Upgrade to unlock."))
            #expect(lines.last == "signed out: signedOut")
            // The README shows the same lines.
            let readme = try String(contentsOf: packageRoot.appendingPathComponent("examples/client/README.md"), encoding: .utf8)
            for line in lines where !line.hasPrefix("anonymous session: ") && !line.hasPrefix("registered ") {
                #expect(readme.contains(line), "\(line)")
            }
        }
    }
}
