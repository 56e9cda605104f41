import Foundation
import GatehouseTestSupport
import Testing

/// The HTML matrix in a real browser: headless Chromium from Debian's `chromium` package, driven by Selenium
/// from a virtualenv at `.venv` (`Tests/Browser/matrix_page.py`). `.ci/run` installs both; without them the
/// test is reported as skipped, with the reason (in CI, `CI=true`, it fails instead).
@Suite(.startsServers) struct MatrixBrowserTests {
    @Test(.enabled(if: BrowserScript.shouldRun(root: CLITests.root), Comment(rawValue: BrowserScript.skipReason)))
    func cellsFiltersAndPanelWorkInChromium() async throws {
        let page = try await CLITests.run(["matrix", "policies/research-crawler", "--format", "html"])
        #expect(page.status == 0)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let html = folder.appendingPathComponent("matrix.html")
        try page.out.write(to: html, atomically: true, encoding: .utf8)
        // Kept after the run, for a person to look at.
        let screenshot = CLITests.root.appendingPathComponent(".build/matrix-browser.png")

        let (status, text) = try await BrowserScript.run("matrix_page.py", [html.path, screenshot.path], root: CLITests.root)
        #expect(status == 0, "\(text)")
        #expect(text.contains("ok: the subject filter leaves the team row"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: screenshot.path))
    }
}
