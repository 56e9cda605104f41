import Foundation
import Gatehouse
import Logging
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Synchronization

/// A version that was refused: when, and why (diagnostics as `file:line:col: error: ...` text).
public struct RefusedVersion: Error, Sendable, Hashable {
    public var at: Date
    public var diagnostics: [String]
}

/// What one reload did.
public enum ReloadOutcome: Sendable, Hashable {
    case installed(PolicyVersion)
    case unchanged(PolicyVersion)
    case refused(RefusedVersion)
}

/// Loads the policy folder, refuses versions that do not load (and, when strict, ones whose policy
/// tests fail), and swaps good ones into the facade (`GatehouseService.install`, policy and version in one step;
/// the facade holds which version is active, the reloader only what it refused and what it last read). Reloads run one
/// at a time, on a dispatch queue of the reloader's own (its actor executor), never on a request's task nor on the
/// cooperative pool: a compile (and a strict reload's policy tests) is long CPU work that never suspends, and on a
/// two-core server it held a cooperative thread, one of two, for all of it.
public actor PolicyReloader {
    private nonisolated let executor = DispatchQueueExecutor(label: "gatehouse.policy-reload")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let directory: String
    public nonisolated let strict: Bool
    /// Runs a loaded set's policy tests when `strict` (the CLI's, from PolicyVerification).
    private nonisolated let checks: PolicyChecks
    private nonisolated let service: GatehouseService
    private nonisolated let logger: Logger
    private nonisolated let metrics: ServerMetrics?
    /// The active version's signed bundle, rebuilt after each install (nil: no `--bundle-key`).
    public nonisolated let bundles: PolicyBundles?
    /// The bundle event streams told of each installed version (nil: no `--bundle-key`).
    public nonisolated let events: BundleEvents?
    private nonisolated let state: Mutex<(refused: RefusedVersion?, lastRead: FolderFingerprint)>

    /// The version deciding now (the facade's).
    public nonisolated var active: PolicyVersion { service.active.version }
    /// The last version refused, if any was since start.
    public nonisolated var lastRefused: RefusedVersion? { state.withLock { $0.refused } }
    /// The folder as it looked just before the last load read it.
    public nonisolated var lastRead: FolderFingerprint { state.withLock { $0.lastRead } }

    /// The first load; a server with nothing to serve does not start, so its diagnostics are the error.
    public static func initialPolicy(directory: String, strict: Bool, checks: PolicyChecks) -> Result<(CompiledPolicy, PolicyVersion), RefusedVersion> {
        load(directory: directory, strict: strict, checks: checks).result
    }

    public init(
        directory: String, strict: Bool, checks: PolicyChecks, service: GatehouseService, logger: Logger, metrics: ServerMetrics? = nil,
        bundles: PolicyBundles? = nil, events: BundleEvents? = nil
    ) {
        self.checks = checks
        self.events = events
        self.bundles = bundles
        self.directory = directory
        self.strict = strict
        self.service = service
        self.logger = logger
        self.metrics = metrics
        self.state = Mutex((nil, service.active.version.fingerprint))
    }

    /// Reads and compiles the folder once and installs the result if it is good and new.
    @discardableResult
    public func reload() -> ReloadOutcome {
        let (result, fingerprint) = Self.load(directory: directory, strict: strict, checks: checks)
        state.withLock { $0.lastRead = fingerprint }
        switch result {
        case .success(let (policy, version)):
            // The folder is good again: an earlier refusal no longer describes it (`/v1/policy` drops it).
            state.withLock { $0.refused = nil }
            let previous = active
            if version.hash == previous.hash {
                return .unchanged(previous)
            }
            // Only a version about to be installed is bundled (a refused one never reaches here), and before it
            // decides: once the new version answers, `GET /v1/bundle` serves it too.
            let bundle = bundles?.rebuild(directory: directory, policyHash: version.hash)
            service.install(policy, version: version)
            // Streams hear of the version once it decides and `GET /v1/bundle` serves it (a bundle left as it was,
            // because the folder moved on since this read, is announced by the reload that builds the next one).
            if let bundle, bundle.manifest.policyHash == version.hash { events?.announce(BundleEvent(bundle)) }
            metrics?.reloaded(.installed)
            logger.info("policy reloaded", metadata: ["policy.hash": "\(version.hash)", "policy.previous": "\(previous.hash)"])
            return .installed(version)
        case .failure(let refused):
            state.withLock { $0.refused = refused }
            metrics?.reloaded(.refused)
            logger.error(
                "policy reload refused; the last good version keeps serving",
                metadata: ["policy.hash": "\(active.hash)", "diagnostics": .array(refused.diagnostics.map { Logger.MetadataValue.string($0) })])
            return .refused(refused)
        }
    }

    private static func load(directory: String, strict: Bool, checks: PolicyChecks)
        -> (result: Result<(CompiledPolicy, PolicyVersion), RefusedVersion>, fingerprint: FolderFingerprint)
    {
        let fingerprint = FolderFingerprint.of(directory)
        return (load(directory: directory, strict: strict, checks: checks, fingerprint: fingerprint), fingerprint)
    }

    private static func load(
        directory: String, strict: Bool, checks: PolicyChecks, fingerprint: FolderFingerprint
    ) -> Result<(CompiledPolicy, PolicyVersion), RefusedVersion> {
        let result = PolicyCompiler.load(directory: directory, relativePaths: true)
        let renderer = DiagnosticRenderer(sources: result.sources)
        let now = Date()
        guard let policy = result.policy else {
            // The diagnostic's line and its help (the did-you-mean an operator acts on), without the quoted source.
            let errors = result.diagnostics.filter { $0.severity == .error }.map { d in
                ([firstLine(renderer.text(d))] + d.help.map { "help: \($0)" }).joined(separator: "; ")
            }
            return .failure(RefusedVersion(at: now, diagnostics: errors))
        }
        if strict {
            let failing = checks.failingTests(result)
            if !failing.isEmpty {
                return .failure(RefusedVersion(at: now, diagnostics: failing))
            }
        }
        let files = result.sources.keys.sorted()
        return .success((policy, PolicyVersion(hash: policy.contentHash, name: policy.name, loadedAt: now, files: files, fingerprint: fingerprint)))
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }
}

/// A serial executor that runs its jobs on a dispatch queue of its own: for actors whose work is long and CPU-bound
/// (a policy compile), so it runs on a thread of its own and never holds one of the cooperative pool's few.
final class DispatchQueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label, qos: .userInitiated) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}
