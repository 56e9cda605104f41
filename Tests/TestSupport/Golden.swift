import Foundation

/// Golden files: the expected output of a test, kept beside it and rewritten on request.
///
/// `POLICY_UPDATE_GOLDEN=1 swift test` rewrites every golden file a test reaches with what the code now
/// produces; review the diff and commit it. Otherwise a test compares its output with the file.
public enum Golden {
    /// Whether this run rewrites golden files (`POLICY_UPDATE_GOLDEN=1`).
    public static var isUpdating: Bool { ProcessInfo.processInfo.environment["POLICY_UPDATE_GOLDEN"] == "1" }

    /// The text `actual` is expected to equal: the file at `url`, first rewritten with `actual` when updating.
    public static func expected(for actual: String, at url: URL) throws -> String {
        if isUpdating {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try actual.write(to: url, atomically: true, encoding: .utf8)
        }
        return try String(contentsOf: url, encoding: .utf8)
    }
}
