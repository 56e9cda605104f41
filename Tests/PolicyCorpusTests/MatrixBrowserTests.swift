import Foundation
import Testing

/// The HTML matrix in a real browser: headless Chromium from Debian's `chromium` package, driven by Selenium
/// from a virtualenv at `.venv` (`Tests/Browser/matrix_page.py`). `.ci/run` installs both; without them the
/// test is reported as skipped, with the reason.
@Suite struct MatrixBrowserTests {
    static let python = CLITests.root.appendingPathComponent(".venv/bin/python").path
    static let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
    static let chromedriver = ProcessInfo.processInfo.environment["CHROMEDRIVER"] ?? "/usr/bin/chromedriver"
    static var available: Bool {
        [python, chromium, chromedriver].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(.enabled(if: available, "needs .venv/bin/python with selenium, /usr/bin/chromium and /usr/bin/chromedriver: run .ci/run"))
    func cellsFiltersAndPanelWorkInChromium() throws {
        let page = try CLITests.run(["matrix", "policies/research-crawler", "--format", "html"])
        #expect(page.status == 0)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let html = folder.appendingPathComponent("matrix.html")
        try page.out.write(to: html, atomically: true, encoding: .utf8)
        // Kept after the run, for a person to look at.
        let screenshot = CLITests.root.appendingPathComponent(".build/matrix-browser.png")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [CLITests.root.appendingPathComponent("Tests/Browser/matrix_page.py").path, html.path, screenshot.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        // Bounded: the browser gets five minutes (it took 73 s while the whole suite ran on two busy cores), then is stopped.
        if finished.wait(timeout: .now() + .seconds(300)) == .timedOut { process.terminate() }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("ok: the subject filter leaves the team row"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: screenshot.path))
    }
}
