import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /playground`: the active version's matrix with a live request editor, over the router and in a real browser.
@Suite struct PlaygroundTests {
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

    static let python = TestServer.root.appendingPathComponent(".venv/bin/python").path
    static let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
    static let chromedriver = ProcessInfo.processInfo.environment["CHROMEDRIVER"] ?? "/usr/bin/chromedriver"
    static var available: Bool {
        [python, chromium, chromedriver].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(.enabled(if: available, "needs .venv/bin/python with selenium, /usr/bin/chromium and /usr/bin/chromedriver: run .ci/run"))
    func clickEditAndExplainInChromium() async throws {
        let t = try TestServer()  // research-crawler copied to a folder; served by a real process on loopback
        let (server, url) = try await ServedProcess.start([
            "--policies", t.policies.path, "--database", t.dir.appendingPathComponent("served.sqlite").path,
        ])
        defer { server.terminate() }
        let screenshot = TestServer.root.appendingPathComponent(".build/playground-browser.png")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [TestServer.root.appendingPathComponent("Tests/Browser/playground_page.py").path, url.absoluteString, screenshot.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        // Bounded: five minutes for the browser (the matrix test took 73 s under a full suite on busy cores).
        if finished.wait(timeout: .now() + .seconds(300)) == .timedOut { process.terminate() }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try await ServedProcess.stop(server)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("ok: editing the tier to team turns the decision to allow"), "\(text)")
        #expect(text.contains("ok: with its detail and byte offset"), "\(text)")
    }
}
