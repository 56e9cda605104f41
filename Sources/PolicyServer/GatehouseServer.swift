import Foundation
import Gatehouse
import IdentityPostgres
import Logging
import PolicyBundle
import PolicyEngine
import PolicyModel
import Tracing

/// Everything a running server holds, and the decision and identity work its routes call; no HTTP here.
public final class GatehouseServer: Sendable {
    public let settings: ServerSettings
    /// The identity store `settings.database` names: SQLite, or PostgreSQL (whose pool `store.service` runs).
    public let store: OpenedIdentityStore
    public let service: GatehouseService
    public let reloader: PolicyReloader
    /// The active version's signed bundle (`GET /v1/bundle`); nil without `--bundle-key`.
    public let bundles: PolicyBundles?
    public let metrics: ServerMetrics
    /// The open `GET /v1/bundle/events` streams and the version they were last told of; nil without `--bundle-key`.
    public let bundleEvents: BundleEvents?
    public let signInLimiter: RateLimiter
    /// Failed operator-credential attempts per client (the sign-in limit): past it, every attempt is 429.
    public let operatorLimiter: RateLimiter
    /// App Store notifications per client (`settings.notificationLimit`): past it, 429 before any verification.
    public let notificationLimiter: RateLimiter
    /// The write quotas per account and per client (`WriteQuota`).
    public let writeQuota: WriteQuota
    /// The decision log's own quotas per account and per client (`--decision-log-limit`): records past them are dropped.
    public let recordQuota: WriteQuota
    /// Connections open now, against `settings.maxConnections`.
    let connections: ConnectionCount
    /// Malformed requests are logged at most once a minute per client.
    let malformedLog = LogGate(interval: 60)
    public let logger: Logger
    /// The `/playground` page, rebuilt when the policy version changes.
    public let playground: Playground

    /// The first policy did not load: nothing to serve. Its diagnostics say why.
    public struct StartError: Error, CustomStringConvertible {
        public var diagnostics: [String]
        public var description: String { (["the policy set does not load:"] + diagnostics).joined(separator: "\n") }
    }

    /// Opens the database (SQLite: creating and migrating it; PostgreSQL: the pool, which `Serve`
    /// runs and migrates before serving), loads the policy set, and wires the facade.
    ///
    /// `checks` are the policy tests a strict reload runs and the playground's matrix (PolicyCLI passes
    /// `PolicyChecks.verification`). `identity` and `jwksFetcher` are for tests (fewer PIN rounds, local keys); by default the
    /// configuration is the identity layer's and keys come from `settings.appleJWKS` or Apple.
    public init(
        settings: ServerSettings, checks: PolicyChecks, logger: Logger = Logger(label: "gatehouse"), identity: IdentityConfiguration? = nil,
        jwksFetcher: (any JWKSFetcher)? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.settings = settings
        self.logger = logger
        self.playground = Playground(matrixPage: checks.matrixPage)
        let metrics = ServerMetrics()
        self.metrics = metrics
        let (policy, version): (CompiledPolicy, PolicyVersion)
        switch PolicyReloader.initialPolicy(directory: settings.policies, strict: settings.strictReload, checks: checks) {
        case .success(let loaded): (policy, version) = loaded
        case .failure(let refused): throw StartError(diagnostics: refused.diagnostics)
        }
        store = try OpenedIdentityStore.open(settings.database, field: "--database", logger: logger)
        var configuration = identity ?? IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: Set(settings.appleClientIds)))
        if let digest = settings.operatorTokenDigest { configuration.operatorTokenDigests = [digest] }
        configuration.appStore = settings.appStore
        if let lifetime = settings.accessTokenLifetime { configuration.accessTokenLifetime = lifetime.asTimeInterval }
        if let grace = settings.refreshGracePeriod { configuration.refreshGracePeriod = grace.asTimeInterval }
        if settings.appStore.isConfigured, !AppleRootCertificate.matchesPin {
            logger.error("the shipped Apple Root CA - G3 does not match its pinned fingerprint: no App Store purchase will verify")
        }
        let fetcher: any JWKSFetcher =
            jwksFetcher
            ?? settings.appleJWKS.map { source -> any JWKSFetcher in
                if source.hasPrefix("https://") || source.hasPrefix("http://"), let url = URL(string: source) {
                    return URLJWKSFetcher(url: url)
                }
                return FileJWKSFetcher(url: URL(fileURLWithPath: source))
            } ?? URLJWKSFetcher.apple
        // With tracing on (`ServerTracing`), every transaction and statement in a span; off, the store itself.
        let traced: any IdentityStore =
            DecisionTracing.isEnabled ? TracedStore(store.store, system: store.postgres == nil ? "sqlite" : "postgresql") : store.store
        let identityService = IdentityService(store: traced, configuration: configuration, jwksFetcher: fetcher, now: now)
        let recordQuota = WriteQuota(account: settings.decisionLogLimit, source: settings.decisionLogLimit, now: now)
        self.recordQuota = recordQuota
        let recording = DecisionRecording(
            mode: settings.decisionLog, signedOut: settings.decisionLogSignedOut,
            admit: { client, userId in recordQuota.admitsRecord(source: client, account: userId) })
        let shadow = settings.shadow.map { ShadowEvaluator(directory: $0) }
        if let refused = shadow?.candidate.refused, !refused.isEmpty {
            logger.error("the shadow policy set does not compile; it is not decided", metadata: ["diagnostics": "\(refused)"])
        }
        service = GatehouseService(
            policy: policy, version: version, identity: identityService, recording: recording, shadow: shadow,
            trustCallerSubjects: settings.trustCallerSubjects, observer: metrics, cacheCapacity: settings.decisionCacheEntries)
        let bundles = settings.bundleKey.map(PolicyBundles.init(key:))
        bundles?.rebuild(directory: settings.policies, policyHash: version.hash)
        self.bundles = bundles
        let bundleEvents = bundles.map { bundles in
            BundleEvents(
                announced: bundles.current.map(BundleEvent.init), heartbeat: settings.bundleHeartbeat, queueLimit: settings.bundleStreamQueue,
                perClientLimit: settings.bundleStreamsPerClient
            ) { open, dropped in metrics.bundleStreams(open: open, dropped: dropped) }
        }
        self.bundleEvents = bundleEvents
        reloader = PolicyReloader(
            directory: settings.policies, strict: settings.strictReload, checks: checks, service: service, logger: logger, metrics: metrics, bundles: bundles,
            events: bundleEvents)
        signInLimiter = RateLimiter(limit: settings.signInLimit, now: now)
        operatorLimiter = RateLimiter(limit: settings.signInLimit, now: now)
        notificationLimiter = RateLimiter(limit: settings.notificationLimit, now: now)
        writeQuota = WriteQuota(account: settings.writeLimit, source: settings.sourceWriteLimit, now: now)
        connections = ConnectionCount(limit: settings.maxConnections, perClient: settings.maxConnectionsPerClient)
        logger.info("policy loaded", metadata: ["policy.hash": "\(version.hash)", "policy.name": "\(version.name)"])
    }

    /// The key of the client's per-client limits (`ForwardedClient.limitKey` of its address).
    func clientKey(_ context: ServerContext) -> String {
        PolicyServer.clientKey(context, ipv6Prefix: settings.ipv6PrefixLength)
    }

    /// The decision log's view of a request: its client and how many records it may add; nil with the log off (no
    /// allocation on the answer's path).
    func decisionOrigin(_ context: ServerContext) -> DecisionOrigin? {
        guard service.decisionLog != .off else { return nil }
        return DecisionOrigin(client: clientKey(context), maxRecords: service.recorder.settings.maxPerRequest)
    }

    // MARK: - Health

    /// What `/readyz` reports about the database.
    public enum DatabaseState: Sendable, Equatable {
        /// It answers a read and would take a write.
        case ready
        /// It answers reads but refuses writes (a read-only file or open): decisions without a bearer and
        /// reads go on, sign-ins and every other write answer 503 `storage`.
        case readOnly
        /// It does not answer within the readiness deadline, or a table requests use is missing or unreadable.
        case unavailable
    }

    /// Whether the database answers a read of what requests use, and whether it would take a write, within
    /// its own short deadline (`OpenedIdentityStore.readiness`).
    public func databaseState() async -> DatabaseState {
        switch await store.readiness() {
        case .ready: .ready
        case .readOnly: .readOnly
        case .unavailable: .unavailable
        }
    }

    /// Whether this replica shares its store with others (PostgreSQL) and does not hear their writes now (the
    /// `LISTEN` connection is down): `/readyz` and `/metrics` say so.
    public var notificationsDown: Bool {
        let changes = service.identity.factChanges
        return changes.sharedWithOthers && !changes.heardFromOthers
    }

    /// `GET /v1/policy`: the active version and the last refused one.
    public func policyStatus() -> JSONText {
        let active = reloader.active
        var fields: [JSONText.Field] = [
            .init(
                "active",
                .object([
                    .init("hash", .string(active.hash)), .init("name", .string(active.name)),
                    .init("loadedAt", .string(Timestamp.format(active.loadedAt))),
                    .init("files", .array(active.files.map { .string($0) })),
                ])),
            .init("strictReload", .bool(settings.strictReload)),
        ]
        if let refused = reloader.lastRefused {
            fields.append(
                .init(
                    "lastRefused",
                    .object([
                        .init("at", .string(Timestamp.format(refused.at))),
                        .init("diagnostics", .array(refused.diagnostics.map { .string($0) })),
                    ])))
        }
        return .object(fields)
    }

    // MARK: - Identity

    /// A token pair as the API answers it.
    public static func tokens(_ t: SessionTokens) -> JSONText {
        .object([
            .init("accessToken", .string(t.accessToken)), .init("accessExpiresAt", .string(Timestamp.format(t.accessExpiresAt))),
            .init("refreshToken", .string(t.refreshToken)), .init("userId", .string(t.userId)),
        ])
    }

    /// Counts a sign-in outcome and passes the result (or error) on.
    public func signIn<Outcome>(method: String, _ body: () async throws -> Outcome) async throws -> Outcome {
        guard DecisionTracing.isActive else { return try await countedSignIn(method: method, body) }
        // The method and the outcome (`success` or the refusal's code); never the credential or the account.
        return try await withSpan("gatehouse.sign_in") { span in
            span.attributes["gatehouse.sign_in.method"] = method
            do {
                let outcome = try await countedSignIn(method: method, body)
                span.attributes["gatehouse.sign_in.outcome"] = "success"
                return outcome
            } catch {
                span.attributes["gatehouse.sign_in.outcome"] = (error as? IdentityError)?.code.rawValue ?? "error"
                throw error
            }
        }
    }

    private func countedSignIn<Outcome>(method: String, _ body: () async throws -> Outcome) async throws -> Outcome {
        do {
            let tokens = try await body()
            metrics.signIn(method: method, outcome: "success")
            return tokens
        } catch let error as IdentityError {
            metrics.signIn(method: method, outcome: error.code.rawValue)
            throw error
        }
    }
}

extension Duration {
    /// The duration in seconds, with its fraction.
    var asTimeInterval: TimeInterval { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
