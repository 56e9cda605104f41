import AppStoreTestSupport
import Crypto
import Foundation
import _CryptoExtras
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
    static let appleClientId = "com.example.console"
    static let hostileDisplayName = #"<img src=x onerror="window.__pwned=3">Mallory <script>window.__pwned=4</script>"#
    static let hostileDevice = #"<img src=x onerror="window.__pwned=5">"#
    static let hostileNames = [#"<img src=x onerror="window.__pwned=1">"#, "<script>window.__pwned=2</script><b>Casa</b>"]

    static func call(
        _ base: URL, _ method: String, _ path: String, token: String? = nil, headers: [String: String] = [:], _ body: String? = nil
    ) async throws -> [String: Any] {
        var request = URLRequest(url: base.appendingPathComponent(path), timeoutInterval: 60)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
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
        let apple = try AppleKey()
        let jwks = t.dir.appendingPathComponent("apple-jwks.json")
        try apple.jwks().write(to: jwks)
        let errors = t.dir.appendingPathComponent("served.stderr")
        let process = try await Program(
            ServedProcess.binary,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--console", "--policies", t.policies.path,
                "--database", t.dir.appendingPathComponent("served.sqlite").path, "--decision-log", "all",
                "--app-store-bundle-id", Self.bundleId, "--app-store-root-certificate", root.path,
                "--apple-jwks", jwks.path, "--apple-client-id", Self.appleClientId,
            ],
            environment: .only(ServedProcess.environment.merging(["GATEHOUSE_OPERATOR_TOKEN": Self.operatorToken]) { _, given in given })
        ).start(errorLog: errors)
        defer { process.kill() }
        let line = try await process.nextLine(within: .seconds(60))
        let base = try #require(line.hasPrefix("listening on ") ? URL(string: String(line.dropFirst("listening on ".count))) : nil, "\(line)")

        // The user, through the public API only.
        // Each sign-in names its device: the app's model identifier and User-Agent, then a hostile name (as text on the page).
        let registered = try await Self.call(
            base, "POST", "/v1/auth/pin/register", headers: ["Gatehouse-Device": "iPhone15,2", "User-Agent": "ResearchApp/1.4.2 CFNetwork/1496.0.7 Darwin/23.5.0"],
            #"{"username": "mira_support", "pin": "482615"}"#)
        let first = try #require(registered["accessToken"] as? String)
        let userId = try #require(registered["userId"] as? String)
        let second = try #require(
            try await Self.call(
                base, "POST", "/v1/auth/pin/signin", headers: ["Gatehouse-Device": Self.hostileDevice], #"{"username": "mira_support", "pin": "482615"}"#
            )["accessToken"] as? String)
        for name in Self.hostileNames { _ = try await Self.call(base, "POST", "/v1/spaces", token: first, Self.json(["name": name])) }
        let accountToken = try #require(try await Self.call(base, "GET", "/v1/me", token: first)["appAccountToken"] as? String)
        let original = "7000000000004343"
        let jws = ca.sign(
            AppStoreTestCA.transaction(
                bundleId: Self.bundleId, productId: "com.researchapp.pro.monthly", originalTransactionId: original, signedAt: Date(),
                expiresAt: Date().addingTimeInterval(30 * 86400), appAccountToken: accountToken))
        let purchase = try await Self.call(base, "POST", "/v1/me/purchases", token: first, Self.json(["signedTransaction": jws]))
        #expect(purchase["tier"] as? String == "pro")
        // A second user, signed in with Apple with a hostile display name (the name arrives on the first sign-in).
        let nonce = try #require(try await Self.call(base, "POST", "/v1/auth/apple/nonce")["nonce"] as? String)
        let digest = SHA256.hash(data: Data(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
        let appleSubject = "000555.console.mallory"
        let identityToken = try apple.identityToken(subject: appleSubject, nonceDigest: digest)
        _ = try await Self.call(
            base, "POST", "/v1/auth/apple", Self.json(["identityToken": identityToken, "nonce": nonce, "fullName": Self.hostileDisplayName]))
        let policyHash = try #require((try await Self.call(base, "GET", "/v1/policy")["active"] as? [String: Any])?["hash"] as? String)

        let fixture = t.dir.appendingPathComponent("console-fixture.json")
        try Data(
            Self.json([
                "operatorToken": Self.operatorToken, "username": "mira_support", "userId": userId, "tokens": [first, second],
                "spaceNames": Self.hostileNames, "originalTransactionId": original, "policyHash": policyHash,
                "appleSubject": appleSubject, "hostileDisplayName": Self.hostileDisplayName,
                "device": "iPhone15,2 · ResearchApp/1", "hostileDevice": Self.hostileDevice,
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
            "ok: the credential is not in the page source", "ok: a hostile display name is shown as its text",
            "ok: each session shows its device", "ok: a hostile device name is shown as its text",
            "ok: a decision record's pseudonym finds the user",
        ] {
            #expect(text.contains(step), "\(step) missing from:\n\(text)")
        }
        // The credential in no line the server wrote.
        let output = process.unreadLines().joined(separator: "\n") + "\n" + ((try? String(contentsOf: errors, encoding: .utf8)) ?? "")
        #expect(!output.contains(Self.operatorToken), "the operator credential reached the server's output")
        #expect(!output.contains(first) && !output.contains(second))
    }
}

/// An RSA key standing in for Apple's: its JWKS for `--apple-jwks`, and identity tokens signed with it.
private struct AppleKey {
    let key: _RSA.Signing.PrivateKey
    let kid = "console-test-key"

    init() throws { key = try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    func jwks() throws -> Data {
        let p = try key.publicKey.getKeyPrimitives()
        let keys = [["kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": Self.base64URL(p.modulus), "e": Self.base64URL(p.publicExponent)]]
        return try JSONSerialization.data(withJSONObject: ["keys": keys], options: [.sortedKeys])
    }

    /// The identity token Apple would give for `subject` after a request whose nonce was `nonceDigest` (SHA-256 hex).
    func identityToken(subject: String, nonceDigest: String, now: Date = Date()) throws -> String {
        let claims: [String: Any] = [
            "iss": "https://appleid.apple.com", "aud": ConsoleBrowserTests.appleClientId, "sub": subject, "iat": Int(now.timeIntervalSince1970),
            "exp": Int(now.timeIntervalSince1970) + 600, "nonce": nonceDigest,
        ]
        func part(_ object: [String: Any]) throws -> String { Self.base64URL(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) }
        let input = try part(["alg": "RS256", "kid": kid]) + "." + part(claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
