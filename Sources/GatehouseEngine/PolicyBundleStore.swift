import Foundation
import PolicyBundle
import Synchronization

/// A verified, compiled bundle: the engine that decides from it and the manifest that says which version it is.
public struct LoadedPolicyBundle: Sendable {
    /// The bundle's manifest: `policyHash` is the version the server reports for the same set.
    public let manifest: BundleManifest
    /// The engine compiled from the bundle's files.
    public let engine: Engine
    /// The bundle's bytes, as received and stored.
    public let bytes: [UInt8]
}

/// Why the store refused a bundle. The bundle held before stays in use.
public enum PolicyBundleStoreError: Error, Sendable, CustomStringConvertible {
    /// The bundle failed verification (bad signature, unknown key, hash mismatch, newer format, downgrade, ...).
    case refused(BundleVerificationError)
    /// The bundle verified but its set does not compile with this engine.
    case doesNotCompile(PolicyLoadFailure)
    /// The verified bundle could not be written to the store's directory (it is not installed either).
    case cannotStore(String)

    public var description: String {
        switch self {
        case .refused(let error): "bundle refused: \(error)"
        case .doesNotCompile(let failure): "bundle does not compile: \(failure)"
        case .cannotStore(let what): "cannot store the bundle: \(what)"
        }
    }
}

/// The device's copy of the policy: verifies bundles against pinned public keys, compiles them, swaps them in
/// atomically, and keeps the last good one in an app-supplied directory, which it loads at init before any network.
///
/// Decide locally only what the UI needs (show a button, a prompt, a limit banner). Anything that changes data or
/// spends money is the server's decision: it checks again, whatever the device decided.
public final class PolicyBundleStore: Sendable {
    /// The file name of the stored bundle under `directory`.
    public static let fileName = "policy.gatehouse-bundle"

    /// The directory the last good bundle is kept in.
    public let directory: URL
    /// The pinned public keys a bundle must be signed by.
    public let trustedKeys: [BundlePublicKey]
    private let state: Mutex<LoadedPolicyBundle?>

    /// A store over `directory` (created if missing). The bundle stored there, if any, is verified and loaded now:
    /// the app decides from it at launch, offline. A stored bundle that no longer verifies or compiles is ignored.
    public init(directory: URL, trustedKeys: [BundlePublicKey]) {
        self.directory = directory
        self.trustedKeys = trustedKeys
        var loaded: LoadedPolicyBundle?
        if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(Self.fileName).path) {
            loaded = try? Self.load([UInt8](data), trustedKeys: trustedKeys, heldRevision: nil)
        }
        state = Mutex(loaded)
    }

    /// The bundle deciding now, if any.
    public var current: LoadedPolicyBundle? { state.withLock { $0 } }

    /// Verifies and compiles `bytes`, writes them to the directory (atomically), and swaps them in. A bundle with a
    /// lower revision than the one held is refused (downgrade); the bundle held stays in use on any refusal.
    @discardableResult
    public func install(_ bytes: [UInt8]) throws(PolicyBundleStoreError) -> LoadedPolicyBundle {
        let held = current?.manifest.revision
        let loaded = try Self.load(bytes, trustedKeys: trustedKeys, heldRevision: held)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: directory.appendingPathComponent(Self.fileName), options: .atomic)
        } catch {
            throw .cannotStore(error.localizedDescription)
        }
        // Two installs racing: the higher revision wins, so the store never goes back.
        return state.withLock { now in
            if let now, now.manifest.revision > loaded.manifest.revision { return now }
            now = loaded
            return loaded
        }
    }

    /// The decision for `request` from the bundle held, and the policy version (`policyHash`) that decided; nil when
    /// no bundle is held yet.
    public func decide(_ request: Request) -> (decision: Decision, policyHash: String)? {
        guard let current else { return nil }
        return (current.engine.decide(request), current.manifest.policyHash)
    }

    static func load(_ bytes: [UInt8], trustedKeys: [BundlePublicKey], heldRevision: UInt64?) throws(PolicyBundleStoreError) -> LoadedPolicyBundle {
        let bundle: PolicyBundle
        do { bundle = try PolicyBundle.verify(bytes, trusting: trustedKeys, heldRevision: heldRevision) } catch { throw .refused(error) }
        switch Engine.from(bundle.compile()) {
        case .success(let engine): return LoadedPolicyBundle(manifest: bundle.manifest, engine: engine, bytes: bytes)
        case .failure(let failure): throw .doesNotCompile(failure)
        }
    }
}
