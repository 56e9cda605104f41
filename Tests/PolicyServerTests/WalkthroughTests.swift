import Foundation
import Testing

/// The curl walk-throughs in `examples/walkthroughs/`, each against a live server of its policy set;
/// every answer is checked by the script itself (it exits non-zero at the first one that differs).
@Suite struct WalkthroughTests {
    static let operatorToken = "walkthrough-operator-token-0001"

    @Test(arguments: ["research-crawler", "contacasal", "mimisupply"])
    func walkthrough(_ set: String) async throws {
        let t = try TestServer(policySet: set)
        let (process, url) = try await ServedProcess.start(
            ["--policies", t.policies.path, "--database", t.dir.appendingPathComponent("walk.sqlite").path],
            environment: ["GATEHOUSE_OPERATOR_TOKEN": Self.operatorToken])
        defer { process.terminate() }
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = [TestServer.root.appendingPathComponent("examples/walkthroughs/\(set).sh").path]
        script.environment = [
            "GATEHOUSE_URL": url.absoluteString, "GATEHOUSE_OPERATOR": Self.operatorToken,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        let out = Pipe()
        script.standardOutput = out
        script.standardError = out
        try script.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        script.waitUntilExit()
        #expect(script.terminationStatus == 0, "\(text)")
        #expect(text.contains("\(set): ok"))
        try await ServedProcess.stop(process)
    }
}
