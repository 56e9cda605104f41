import Foundation

/// Runs a Selenium script of `Tests/Browser/` with the repository's `.venv` against Debian's headless Chromium.
///
/// `.ci/run` installs the browser, its driver and the virtualenv; without them a test reports itself skipped with
/// `skipReason`, except in CI (`CI=true`), where it runs and fails with that reason: a CI run that silently skips
/// its browser tests would pass without having looked at a page.
public enum BrowserScript {
    public static let skipReason = "needs .venv/bin/python with selenium, /usr/bin/chromium and /usr/bin/chromedriver: run .ci/run"

    static func python(root: URL) -> String { root.appendingPathComponent(".venv/bin/python").path }
    static var chromium: String { ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium" }
    static var chromedriver: String { ProcessInfo.processInfo.environment["CHROMEDRIVER"] ?? "/usr/bin/chromedriver" }

    /// Whether the virtualenv, the browser and its driver are there.
    public static func isAvailable(root: URL) -> Bool {
        [python(root: root), chromium, chromedriver].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether a browser test runs: when the tools are there, and always in CI, where their absence is a failure.
    public static func shouldRun(root: URL) -> Bool {
        isAvailable(root: root) || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Why a browser test could not run, thrown by `run` when the tools are missing.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description = BrowserScript.skipReason
    }

    /// Runs `Tests/Browser/<script>` with `arguments`; its exit status and everything it printed.
    /// Bounded: the browser gets five minutes (73 s was seen under the full suite on two busy cores), then is stopped.
    public static func run(_ script: String, _ arguments: [String], root: URL) async throws -> (status: Int32, output: String) {
        guard isAvailable(root: root) else { throw Unavailable() }
        let finished = try await Program(path: python(root: root), [root.appendingPathComponent("Tests/Browser/\(script)").path] + arguments)
            .run(errors: .mergedIntoOutput, timeLimit: .seconds(300))
        return (finished.status, finished.standardOutput)
    }
}
