import AppStoreTestSupport
import Foundation
import GatehouseTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `policy serve --console` in headless Chromium (Tests/Browser/console_page.py): a user made through the public API
/// (PIN registration, a second sign-in, spaces with hostile names, an App Store purchase signed by a test CA) is found,
/// explained, fixed and signed out by an operator in the browser. The server's output is then searched for the
/// operator credential. With `GATEHOUSE_CONSOLE_SCREENSHOTS=DIR` the screenshots go to DIR (docs/console.md's come
/// from `GATEHOUSE_CONSOLE_SCREENSHOTS=docs/images`); otherwise to `.build/console-screenshots`, outside the tree.
@Suite(.startsServers) struct ConsoleBrowserTests {
    static let operatorToken = "operator-console-browser-0123456789"
    static let bundleId = "com.researchapp.ios"
    static let hostileNames = [#"<img src=x onerror="window.__pwned=1">"#, "<script>window.__pwned=2</script><b>Casa</b>"]

    static func call(_ base: URL, _ method: String, _ path: String, token: String? = nil, _ body: String? = nil) async throws -> [String: Any] {
        var request = URLRequest(url: base.appendingPathComponent(path), timeoutInterval: 60)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else { throw ProcessFailure(description: "\(method) \(path): \(status) \(String(decoding: data, as: UTF8.self))") }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    static func json(_ value: Any) -> String { String(decoding: try! JSONSerialization.data(withJSONObject: value), as: UTF8.self) }

    @Test(.enabled(if: BrowserScript.shouldRun(root: TestServer.root), Comment(rawValue: BrowserScript.skipReason)))
    func anOperatorFindsExplainsAndFixesAUserInChromium() async throws {
        let t = try TestServer()  // research-crawler copied to a folder; served by a real process on loopback
        try t.write("support.yaml", ConsoleRouteTests.supportFile)
        let ca = try AppStoreTestCA(now: Date())
        let root = t.dir.appendingPathComponent("test-root.der")
        try ca.rootDER.write(to: root)
        let errors = t.dir.appendingPathComponent("served.stderr")
        let process = try await Program(
            ServedProcess.binary,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--console", "--policies", t.policies.path,
                "--database", t.dir.appendingPathComponent("served.sqlite").path, "--decision-log", "all",
                "--app-store-bundle-id", Self.bundleId, "--app-store-root-certificate", root.path,
            ],
            environment: .only(ServedProcess.environment.merging(["GATEHOUSE_OPERATOR_TOKEN": Self.operatorToken]) { _, given in given })
        ).start(errorLog: errors)
        defer { process.kill() }
        let line = try await process.nextLine(within: .seconds(60))
        let base = try #require(line.hasPrefix("listening on ") ? URL(string: String(line.dropFirst("listening on ".count))) : nil, "\(line)")

        // The user, through the public API only.
        let registered = try await Self.call(base, "POST", "/v1/auth/pin/register", #"{"username": "mira_support", "pin": "482615"}"#)
        let first = try #require(registered["accessToken"] as? String)
        let userId = try #require(registered["userId"] as? String)
        let second = try #require(
            try await Self.call(base, "POST", "/v1/auth/pin/signin", #"{"username": "mira_support", "pin": "482615"}"#)["accessToken"] as? String)
        for name in Self.hostileNames { _ = try await Self.call(base, "POST", "/v1/spaces", token: first, Self.json(["name": name])) }
        let accountToken = try #require(try await Self.call(base, "GET", "/v1/me", token: first)["appAccountToken"] as? String)
        let original = "7000000000004343"
        let jws = ca.sign(
            AppStoreTestCA.transaction(
                bundleId: Self.bundleId, productId: "com.researchapp.pro.monthly", originalTransactionId: original, signedAt: Date(),
                expiresAt: Date().addingTimeInterval(30 * 86400), appAccountToken: accountToken))
        let purchase = try await Self.call(base, "POST", "/v1/me/purchases", token: first, Self.json(["signedTransaction": jws]))
        #expect(purchase["tier"] as? String == "pro")
        let policyHash = try #require((try await Self.call(base, "GET", "/v1/policy")["active"] as? [String: Any])?["hash"] as? String)

        let fixture = t.dir.appendingPathComponent("console-fixture.json")
        try Data(
            Self.json([
                "operatorToken": Self.operatorToken, "username": "mira_support", "userId": userId, "tokens": [first, second],
                "spaceNames": Self.hostileNames, "originalTransactionId": original, "policyHash": policyHash,
            ]).utf8
        ).write(to: fixture)
        let shots =
            ProcessInfo.processInfo.environment["GATEHOUSE_CONSOLE_SCREENSHOTS"].map { URL(fileURLWithPath: $0, relativeTo: TestServer.root).path }
            ?? TestServer.root.appendingPathComponent(".build/console-screenshots").path
        let (status, text) = try await BrowserScript.run("console_page.py", [base.absoluteString, fixture.path, shots], root: TestServer.root)
        _ = await process.stop()
        #expect(status == 0, "\(text)")
        for step in [
            "ok: the tier the purchase gave", "ok: explaining view_tickets shows the denial", "ok: the same question is now allowed",
            "ok: the next decision with the ended session's token is refused", "ok: hostile space names are shown as their text",
            "ok: the credential is not in the page source",
        ] {
            #expect(text.contains(step), "\(step) missing from:\n\(text)")
        }
        // The credential in no line the server wrote.
        let output = process.unreadLines().joined(separator: "\n") + "\n" + ((try? String(contentsOf: errors, encoding: .utf8)) ?? "")
        #expect(!output.contains(Self.operatorToken), "the operator credential reached the server's output")
        #expect(!output.contains(first) && !output.contains(second))
    }
}
