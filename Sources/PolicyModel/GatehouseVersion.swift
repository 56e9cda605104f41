/// The release of Gatehouse this code is: the one place the version is written. `policy --version`,
/// `policy version`, the server's `Gatehouse-Version`-free build info and CHANGELOG.md's newest heading name it;
/// a test checks CHANGELOG.md agrees.
public enum GatehouseVersion {
    /// Semantic version of this release.
    public static let current = "0.9.0"
}
