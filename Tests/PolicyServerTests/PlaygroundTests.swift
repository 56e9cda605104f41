import Foundation
import GatehouseTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /playground`: the active version's matrix with a live request editor, over the router and in a real browser.
@Suite(.startsServers) struct PlaygroundTests {
    @Test func servesTheActiveVersionsMatrixAndEditor() async throws {
        let t = try TestServer(policySet: "contacasal")
        let hash = t.server.service.policy.contentHash
        try await t.app.test(.router) { client in
            var first = ""
            try await client.execute(uri: "/playground", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "text/html; charset=utf-8")
                first = r.text
            }
            #expect(first.contains(#"<code id="policy-hash">\#(hash)</code>"#))
            for type in ["account", "onboarding", "space"] { #expect(first.contains("<h2>\(type)</h2>"), "table for \(type)") }
            #expect(first.contains(#"<textarea id="editor""#) && first.contains("fetch('/v1/explain'"))
            #expect(!first.contains("http://") && !first.contains("https://"), "no network beyond this server")
            // Built once per version: the same page again, then a new one after a reload changes the version.
            try await client.execute(uri: "/playground", method: .get) { r in #expect(r.text == first) }
            try t.write("space.yaml", try t.read("space.yaml").replacingOccurrences(of: "Desbloqueie", with: "Abra"))
            guard case .installed = await t.server.reloader.reload() else {
                Issue.record("the edited set was not installed")
                return
            }
            try await client.execute(uri: "/playground", method: .get) { r in
                #expect(!r.text.contains(hash))
                #expect(r.text.contains(t.server.service.policy.contentHash))
            }
        }
    }

    @Test(.enabled(if: BrowserScript.shouldRun(root: TestServer.root), Comment(rawValue: BrowserScript.skipReason)))
    func clickEditAndExplainInChromium() async throws {
        let t = try TestServer()  // research-crawler copied to a folder; served by a real process on loopback
        let (server, url) = try await ServedProcess.start([
            "--policies", t.policies.path, "--database", t.dir.appendingPathComponent("served.sqlite").path,
        ])
        defer { server.kill() }
        let screenshot = TestServer.root.appendingPathComponent(".build/playground-browser.png")
        let (status, text) = try await BrowserScript.run("playground_page.py", [url.absoluteString, screenshot.path], root: TestServer.root)
        try await ServedProcess.stop(server)
        #expect(status == 0, "\(text)")
        #expect(text.contains("ok: editing the tier to team turns the decision to allow"), "\(text)")
        #expect(text.contains("ok: with its detail and byte offset"), "\(text)")
    }
}
