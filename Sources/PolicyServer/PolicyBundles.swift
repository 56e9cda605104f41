import Foundation
import PolicyBundle
import PolicyCompiler
import Synchronization

/// The signed bundle of the policy version serving now (`GET /v1/bundle`), rebuilt after each successful reload
/// when `policy serve --bundle-key` gives a key. It is only ever built from a version the reloader installed: a
/// refused version leaves the last bundle in place.
public final class PolicyBundles: Sendable {
    /// One built bundle and its strong validator.
    public struct Current: Sendable {
        public let bytes: [UInt8]
        /// `"<sha256 of the bytes>"`, quotes included: a strong ETag.
        public let etag: String
        public let manifest: BundleManifest
    }

    private let key: BundleSigningKey
    private let state = Mutex<Current?>(nil)

    public init(key: BundleSigningKey) { self.key = key }

    /// The bundle serving now, if one was built.
    public var current: Current? { state.withLock { $0 } }

    /// Builds the bundle of `directory` if its files still compile to `policyHash` (the version just installed); when
    /// the folder moved on since the reload read it, the bundle is left as it is and the next reload builds it.
    ///
    /// The creation time and revision come from the files, not the clock: the newest file's modification time, in
    /// seconds. So replicas serving the same folder (the same image, or one volume) with the same key serve the same
    /// bytes and ETag, and a device moving between them never sees a lower revision for the same version. Revisions
    /// only go up: one more than the last when the files' time did not move.
    @discardableResult
    public func rebuild(directory: String, policyHash: String) -> Current? {
        let last = current
        if let last, last.manifest.policyHash == policyHash { return last }
        let modified = PolicyCompiler.policyFiles(in: directory)
            .compactMap { (try? FileManager.default.attributesOfItem(atPath: $0))?[.modificationDate] as? Date }.max() ?? Date()
        let seconds = UInt64(max(0, modified.timeIntervalSince1970))
        let revision = max(seconds, (last?.manifest.revision ?? 0) + 1)
        guard let bundle = try? PolicyBundle.build(directory: directory, key: key, createdAt: modified, revision: revision),
            bundle.manifest.policyHash == policyHash
        else { return last }
        let built = Current(
            bytes: bundle.bytes, etag: PolicyBundle.entityTag(of: bundle.bytes),
            manifest: bundle.manifest)
        state.withLock { $0 = built }
        return built
    }

    /// Whether an `If-None-Match` value names `etag` (a list of entity tags, or `*`; weak tags compare weakly).
    public static func matches(ifNoneMatch: String, etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { tag in
            let t = tag.trimmingCharacters(in: .whitespaces)
            return t == "*" || t == etag || t == "W/" + etag
        }
    }
}
