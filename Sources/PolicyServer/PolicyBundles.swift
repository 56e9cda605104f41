import Foundation
import PolicyBundle
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
    /// Revisions only go up: the time in seconds, or one more than the last.
    @discardableResult
    public func rebuild(directory: String, policyHash: String, now: Date = Date()) -> Current? {
        let last = current
        if let last, last.manifest.policyHash == policyHash { return last }
        let revision = max(UInt64(max(0, now.timeIntervalSince1970)), (last?.manifest.revision ?? 0) + 1)
        guard let bundle = try? PolicyBundle.build(directory: directory, key: key, createdAt: now, revision: revision),
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
