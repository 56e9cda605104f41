import Foundation

/// External programs a test runs: a Python script with the interpreter that has the modules it needs: `.venv`'s (`.ci/run` installs
/// them there), else the system's. Tests that need one run when it is there, and in CI (`CI=true`), where its
/// absence is a failure rather than a skip.
public enum ExternalTool {
    /// The first of `.venv/bin/python` and `/usr/bin/python3` that imports every module of `modules`.
    public static func interpreter(root: URL, importing modules: [String]) async -> String? {
        for candidate in [root.appendingPathComponent(".venv/bin/python").path, "/usr/bin/python3"] {
            guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
            let probe = try? await Program(path: candidate, ["-c", "import " + modules.joined(separator: ", ")]).run()
            if probe?.termination == .exited(0) { return candidate }
        }
        return nil
    }

    /// Whether a test needing `modules` runs: when an interpreter has them, and always in CI.
    public static func shouldRun(root: URL, importing modules: [String]) async -> Bool {
        await interpreter(root: root, importing: modules) != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Runs `executable` with `arguments` (and `environment`, when given, instead of this process's); its exit
    /// status and everything it printed (standard output and error). Used for the Python checks, hadolint and the
    /// walk-through scripts.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> (status: Int32, output: String) {
        let finished = try await Program(path: executable, arguments, environment: environment.map { .only($0) } ?? .inherited).run(errors: .mergedIntoOutput)
        return (finished.status, finished.standardOutput)
    }
}
