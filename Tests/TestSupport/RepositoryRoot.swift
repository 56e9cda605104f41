import Foundation

/// The repository's checkout, found once from this file's place in it (`Tests/TestSupport/`): where the shipped
/// policy sets, docs, schemas and scripts the tests read live.
public enum Repository {
    /// The repository's root folder.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A path inside the repository, e.g. `docs/cli.md`.
    public static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }
}
