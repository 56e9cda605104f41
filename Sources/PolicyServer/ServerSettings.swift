import Foundation
import Gatehouse
import Identity
import PolicyBundle

/// Everything `policy serve` is started with; each option may also come from a `GATEHOUSE_*` variable.
public struct ServerSettings: Sendable {
    public var policies: String
    public var database: String
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    public var appleClientIds: [String] = []
    /// A JWKS file path or an https URL; Apple's own key URL when nil.
    public var appleJWKS: String?
    /// Digest of the operator credential (`OperatorToken.digest(ofConfigured:)`); operator routes answer
    /// 401 to everyone when nil.
    public var operatorTokenDigest: Data?
    /// Refuse a reload whose policy tests fail, not only one that does not compile.
    public var strictReload = false
    /// The key `GET /v1/bundle` signs the active version's bundle with (`--bundle-key`); the route answers 404 without one.
    public var bundleKey: BundleSigningKey?
    /// How often an open `GET /v1/bundle/events` stream is sent a heartbeat comment (proxies close silent streams).
    public var bundleHeartbeat: Duration = .seconds(15)
    /// Open bundle event streams per client key at most; past it the stream is refused with 429 (the client polls).
    /// Generous, because phones behind one carrier NAT share an IPv4 address and so a key.
    public var bundleStreamsPerClient = 64
    /// Items (events, heartbeats) a bundle stream may have waiting for a client that does not read; past it the
    /// connection is dropped and counted.
    public var bundleStreamQueue = 8
    /// Largest request body accepted; a larger one is refused with 413 as soon as the limit is passed.
    public var bodyLimit = 1 << 20
    /// A connection with nothing read or written for this long is closed.
    public var idleTimeout: Duration = .seconds(30)
    /// A request must be read whole (header and body) within this long of its first byte, however steadily the
    /// client sends; past it the answer is 408 and the connection is closed.
    public var readTimeout: Duration = .seconds(10)
    /// A request must be answered within this long of reaching its route; past it the answer is 503
    /// `storage_unavailable` with `Retry-After` (never an allow), whatever the handler was waiting on.
    public var requestTimeout: Duration = .seconds(15)
    /// How often the policy folder is looked at, and how long it must stay unchanged before a reload: a save is
    /// compiled 300-400 ms after it (issue 38: most of the time from a save to a device holding the new bundle). A look
    /// is one `stat` per policy file, about 800,000 instructions a second at this interval.
    public var watchInterval: Duration = .milliseconds(100)
    public var settleTime: Duration = .milliseconds(300)
    /// Sign-in, PIN and device routes: requests per client address per window.
    public var signInLimit = RateLimit(requests: 10, window: 60)
    /// Load balancers (exact IP addresses) whose `X-Forwarded-For` names the client: behind one, every
    /// client would otherwise share the balancer's address in the per-client limits.
    public var trustedProxies: Set<String> = []
    /// Answer a whole `POST /v1/decide` without a bearer on the connection's event loop, ahead of the router
    /// (`DecideAhead`: the same answer, without the framework's async road for the body). Off: every request takes the
    /// router (tests compare the two).
    public var decideAhead = true
    /// Which decisions go to the decision log (`off`, `denied`, `all`, `sample:R`); its rows expire with the audit log's
    /// retention. Records are queued on the answer's path and written in batches off it (`DecisionRecorder`).
    public var decisionLog: DecisionLogMode = .off
    /// Also record decisions made for no live session (no bearer and no subject id); off: anyone could fill the log.
    public var decisionLogSignedOut = false
    /// Decision records per account and per client address per window (a record past either is dropped and counted in
    /// `gatehouse_decision_log_dropped_total{reason="quota"}`; the decision is answered as ever).
    public var decisionLogLimit = RateLimit(requests: 600, window: 60)
    /// A candidate policy set decided beside the live one after every answer (`--shadow DIR`), never served.
    public var shadow: String?
    /// Serve the operator console's page at `/console` (`--console`); its routes are operator routes either way.
    public var console = false
    /// App Store purchases: bundle ids, environments and extra roots (`--app-store-*`); off without a bundle id.
    public var appStore = AppStoreConfiguration()
    /// Decide for a subject the caller names in the request (a backend that has authenticated its user itself).
    /// Off by default: a request with a subject and no bearer is refused (`caller_subject_not_trusted`).
    public var trustCallerSubjects = false
    /// Writes (spaces, share codes, privacy, username, export, purchases, account deletion) per account per window.
    public var writeLimit = RateLimit(requests: 30, window: 60)
    /// The same writes per client address per window, whichever accounts make them.
    public var sourceWriteLimit = RateLimit(requests: 120, window: 60)
    /// How often the maintenance task purges expired rows and expires old logs.
    public var maintenanceInterval: Duration = .seconds(3600)
    /// Audit and decision log rows older than this many days are deleted by the maintenance task (at least the
    /// identity layer's minimum, 30 days).
    public var retentionDays = 365
    /// The IPv6 prefix length that keys per-client limits: a client holds a whole /64 and could rotate through it.
    public var ipv6PrefixLength = 64
    /// Connections held open at once; past it a new connection is closed at once, so the server never runs out of
    /// file descriptors (the default is half the process's limit, at most 10,000).
    public var maxConnections = ServerSettings.defaultMaxConnections
    /// Open connections one client may hold (the key the rate limits use: an IPv4 address, an IPv6 /64; a trusted proxy
    /// counts in the total only): past it a new connection of that client is closed at once, unanswered.
    public var maxConnectionsPerClient = 64
    /// App Store Server Notifications per client (`POST /v1/app-store/notifications`), checked before any verification:
    /// Apple's servers send from few addresses, so the default is generous; a replay at request rate is not.
    public var notificationLimit = RateLimit(requests: 600, window: 60)
    /// How long an access token works before the client must refresh it; nil keeps the identity layer's 15 minutes.
    public var accessTokenLifetime: Duration?
    /// How long after a refresh token's rotation a racing client may present it again and get the same successor; nil
    /// keeps the identity layer's 10 seconds. Any other reuse revokes the session.
    public var refreshGracePeriod: Duration?
    /// Live sessions (and as many resources) the decision cache keeps; 0 turns it off.
    public var decisionCacheEntries = GatehouseService.defaultCacheCapacity

    /// Half the soft limit on open files, between 16 and 10,000.
    public static var defaultMaxConnections: Int {
        var limit = rlimit()
        // Glibc imports RLIMIT_NOFILE as an enum case, Darwin as an Int32.
        #if os(Linux)
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < 1 << 40 else { return 10_000 }
        return min(10_000, max(16, Int(limit.rlim_cur / 2)))
    }

    public init(policies: String, database: String) {
        self.policies = policies
        self.database = database
    }

    /// The variable each option falls back to: `GATEHOUSE_` and the case name in screaming snake case
    /// (`GATEHOUSE_APPLE_CLIENT_ID`), backing the option `--` and the case name in kebab case (`--apple-client-id`),
    /// but for the exceptions `rawValue` and `option` name. With `Options` and Serve.swift's declarations this states
    /// every option; ServeOptionTableTests checks that the three agree (ArgumentParser needs its options declared in
    /// the command, and this target does not depend on it) and pins every variable's name.
    public enum Variable: CaseIterable, Sendable {
        case policies, database, host, port, appleClientId, appleJWKS, operatorTokenFile, operatorToken, strictReload
        case bodyLimit, signInLimit, trustedProxies, readTimeout, decisionLog, decisionLogSignedOut, decisionLogLimit
        case appStoreBundleId, appStoreEnvironment, appStoreRootCertificate, trustCallerSubjects
        case writeLimit, sourceWriteLimit, maintenanceInterval, retentionDays, ipv6Prefix, maxConnections, maxConnectionsPerClient, requestTimeout
        case accessTokenLifetime, refreshGracePeriod, decisionCacheEntries, bundleKey, notificationLimit, shadow, console

        /// The variable's name (`GATEHOUSE_SIGNIN_LIMIT` was named before the rule).
        public var rawValue: String {
            self == .signInLimit ? "GATEHOUSE_SIGNIN_LIMIT" : "GATEHOUSE_" + CaseSpelling.screamingSnake.spell("\(self)")
        }

        /// The variable named `rawValue`.
        public init?(rawValue: String) {
            guard let match = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = match
        }

        /// The command-line option of `policy serve` that this variable backs (nil: the variable only).
        public var option: String? {
            switch self {
            // A secret on a command line is shown to every user by `ps`: the token is read from a file or the variable.
            case .operatorToken: nil
            // Given once per address.
            case .trustedProxies: "--trusted-proxy"
            case .retentionDays: "--retention"
            default: "--" + CaseSpelling.kebab.spell("\(self)")
            }
        }

        /// How an error names the setting: `--write-limit (or GATEHOUSE_WRITE_LIMIT)`, or the variable alone.
        var named: String { option.map { "\($0) (or \(rawValue))" } ?? rawValue }
    }

    /// Options as given on the command line (nil: not given), before the environment fills the gaps.
    public struct Options: Sendable {
        public var policies: String?
        public var database: String?
        public var host: String?
        public var port: Int?
        public var appleClientIds: [String] = []
        public var appleJWKS: String?
        public var operatorTokenFile: String?
        public var strictReload = false
        public var bodyLimit: Int?
        /// `REQUESTS/SECONDS`, e.g. `10/60`.
        public var signInLimit: String?
        public var trustedProxies: [String] = []
        /// Seconds (a fraction allowed).
        public var readTimeout: Double?
        /// `off`, `denied`, `all` or `sample:R`.
        public var decisionLog: String?
        public var decisionLogSignedOut = false
        /// `REQUESTS/SECONDS`.
        public var decisionLogLimit: String?
        /// `--app-store-bundle-id` (repeatable).
        public var appStoreBundleIds: [String] = []
        /// `--app-store-environment` (repeatable): Production, Sandbox, Xcode.
        public var appStoreEnvironments: [String] = []
        /// `--app-store-root-certificate` (repeatable): DER or PEM files of extra trusted roots.
        public var appStoreRootCertificates: [String] = []
        public var trustCallerSubjects = false
        /// `REQUESTS/SECONDS`.
        public var writeLimit: String?
        /// `REQUESTS/SECONDS`.
        public var sourceWriteLimit: String?
        /// Seconds (a fraction allowed).
        public var maintenanceInterval: Double?
        public var retentionDays: Int?
        public var ipv6Prefix: Int?
        public var maxConnections: Int?
        public var maxConnectionsPerClient: Int?
        public var notificationLimit: String?
        /// Seconds (a fraction allowed).
        public var requestTimeout: Double?
        /// Seconds (a fraction allowed).
        public var accessTokenLifetime: Double?
        /// Seconds (a fraction allowed).
        public var refreshGracePeriod: Double?
        public var decisionCacheEntries: Int?
        /// The bundle signing key's file (`policy keygen --out`).
        public var bundleKey: String?
        /// The candidate set's folder.
        public var shadow: String?
        public var console = false
        public init() {}
    }

    /// A setting that is missing or malformed, naming the option and its variable.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Settings from the command line first, then the environment; an option given nowhere that has
    /// no default is an error naming both spellings.
    public static func resolve(_ options: Options, environment: [String: String]) throws(Problem) -> ServerSettings {
        func env(_ v: Variable) -> String? { environment[v.rawValue].flatMap { $0.isEmpty ? nil : $0 } }
        guard let policies = options.policies ?? env(.policies) else {
            throw Problem(description: "\(Variable.policies.named) is required")
        }
        guard let database = options.database ?? env(.database) else {
            throw Problem(description: "\(Variable.database.named) is required")
        }
        do throws(IdentityError) {
            _ = try IdentityStoreLocation.parse(database, field: "--database")
        } catch {
            throw Problem(description: "\(Variable.database.named) \(error.reason)")
        }
        var s = ServerSettings(policies: policies, database: database)
        if let host = options.host ?? env(.host) { s.host = host }
        if let port = options.port {
            s.port = port
        } else if let text = env(.port) {
            guard let port = Int(text) else { throw Problem(description: "\(Variable.port.rawValue) must be a port number") }
            s.port = port
        }
        guard (0...65535).contains(s.port) else { throw Problem(description: "--port must be 0...65535 (0 picks a free port)") }
        s.appleClientIds = options.appleClientIds.isEmpty
            ? (env(.appleClientId)?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []) : options.appleClientIds
        s.appleJWKS = options.appleJWKS ?? env(.appleJWKS)
        s.strictReload = options.strictReload || ["1", "true", "yes"].contains(env(.strictReload)?.lowercased() ?? "")
        if let limit = options.bodyLimit {
            s.bodyLimit = limit
        } else if let text = env(.bodyLimit) {
            guard let limit = Int(text), limit > 0 else { throw Problem(description: "\(Variable.bodyLimit.rawValue) must be a positive byte count") }
            s.bodyLimit = limit
        }
        if let text = options.signInLimit ?? env(.signInLimit) {
            s.signInLimit = try RateLimit(parsing: text)
        }
        let proxies = options.trustedProxies.isEmpty
            ? (env(.trustedProxies)?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []) : options.trustedProxies
        for proxy in proxies where ForwardedClient.canonical(proxy) == nil {
            throw Problem(description: "\(Variable.trustedProxies.named) must be IP addresses; '\(proxy)' is not one")
        }
        s.trustedProxies = Set(proxies.compactMap { ForwardedClient.canonical($0) })
        /// A duration in seconds (a fraction allowed) from the option, else its variable; nil when neither is given.
        func seconds(_ given: Double?, _ variable: Variable) throws(Problem) -> Duration? {
            guard let seconds = given ?? env(variable).map({ Double($0) ?? -1 }) else { return nil }
            guard seconds > 0, seconds.isFinite else {
                throw Problem(description: "\(variable.named) must be a positive number of seconds")
            }
            return .milliseconds(Int64(seconds * 1000))
        }
        if let duration = try seconds(options.readTimeout, .readTimeout) { s.readTimeout = duration }
        if let text = options.decisionLog ?? env(.decisionLog) {
            guard let mode = DecisionLogMode(text) else {
                throw Problem(description: "\(Variable.decisionLog.named) must be one of \(DecisionLogMode.spellings), not '\(text)'")
            }
            s.decisionLog = mode
        }
        s.shadow = options.shadow ?? env(.shadow)
        s.console = options.console || ["1", "true", "yes"].contains(env(.console)?.lowercased() ?? "")
        s.decisionLogSignedOut = options.decisionLogSignedOut || ["1", "true", "yes"].contains(env(.decisionLogSignedOut)?.lowercased() ?? "")
        if let text = options.decisionLogLimit ?? env(.decisionLogLimit) {
            s.decisionLogLimit = try RateLimit(parsing: text, variable: .decisionLogLimit)
        }
        s.appStore = try appStore(options, env)
        s.trustCallerSubjects = options.trustCallerSubjects || ["1", "true", "yes"].contains(env(.trustCallerSubjects)?.lowercased() ?? "")
        if let text = options.writeLimit ?? env(.writeLimit) {
            s.writeLimit = try RateLimit(parsing: text, variable: .writeLimit)
        }
        if let text = options.sourceWriteLimit ?? env(.sourceWriteLimit) {
            s.sourceWriteLimit = try RateLimit(parsing: text, variable: .sourceWriteLimit)
        }
        if let duration = try seconds(options.maintenanceInterval, .maintenanceInterval) {
            s.maintenanceInterval = duration
        }
        if let days = options.retentionDays ?? env(.retentionDays).map({ Int($0) ?? -1 }) {
            guard days >= 30 else { throw Problem(description: "\(Variable.retentionDays.named) must be a number of days, at least 30") }
            s.retentionDays = days
        }
        if let prefix = options.ipv6Prefix ?? env(.ipv6Prefix).map({ Int($0) ?? -1 }) {
            guard (1...128).contains(prefix) else { throw Problem(description: "\(Variable.ipv6Prefix.named) must be 1...128") }
            s.ipv6PrefixLength = prefix
        }
        if let connections = options.maxConnections ?? env(.maxConnections).map({ Int($0) ?? -1 }) {
            guard connections > 0 else { throw Problem(description: "\(Variable.maxConnections.named) must be a positive number") }
            s.maxConnections = connections
        }
        if let text = options.notificationLimit ?? env(.notificationLimit) {
            s.notificationLimit = try RateLimit(parsing: text, variable: .notificationLimit)
        }
        if let connections = options.maxConnectionsPerClient ?? env(.maxConnectionsPerClient).map({ Int($0) ?? -1 }) {
            guard connections > 0 else { throw Problem(description: "\(Variable.maxConnectionsPerClient.named) must be a positive number") }
            s.maxConnectionsPerClient = connections
        }
        if let duration = try seconds(options.requestTimeout, .requestTimeout) { s.requestTimeout = duration }
        s.accessTokenLifetime = try seconds(options.accessTokenLifetime, .accessTokenLifetime)
        s.refreshGracePeriod = try seconds(options.refreshGracePeriod, .refreshGracePeriod)
        if let entries = options.decisionCacheEntries ?? env(.decisionCacheEntries).map({ Int($0) ?? -1 }) {
            guard entries >= 0 else { throw Problem(description: "\(Variable.decisionCacheEntries.named) must be a number of entries, 0 or more") }
            s.decisionCacheEntries = entries
        }
        if let file = options.bundleKey ?? env(.bundleKey) {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw Problem(description: "\(Variable.bundleKey.named): cannot read the bundle key file '\(file)'")
            }
            // The file's text is never echoed: the error names the file only.
            guard let key = try? BundleSigningKey(fileText: String(decoding: data, as: UTF8.self)) else {
                throw Problem(description: "\(Variable.bundleKey.named): '\(file)' is not a bundle signing key (policy keygen writes one)")
            }
            s.bundleKey = key
        }
        if let file = options.operatorTokenFile ?? env(.operatorTokenFile) {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw Problem(description: "cannot read the operator token file '\(file)'")
            }
            s.operatorTokenDigest = try OperatorToken.digest(ofConfigured: String(decoding: data, as: UTF8.self))
        } else if let token = env(.operatorToken) {
            s.operatorTokenDigest = try OperatorToken.digest(ofConfigured: token)
        }
        return s
    }

    /// The App Store options: each list from the command line, else its comma-separated variable.
    static func appStore(_ options: Options, _ env: (Variable) -> String?) throws(Problem) -> AppStoreConfiguration {
        func list(_ given: [String], _ v: Variable) -> [String] {
            given.isEmpty ? (env(v)?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } ?? []) : given
        }
        var config = AppStoreConfiguration()
        config.bundleIds = Set(list(options.appStoreBundleIds, .appStoreBundleId))
        let environments = list(options.appStoreEnvironments, .appStoreEnvironment)
        if !environments.isEmpty {
            config.environments = []
            for name in environments {
                guard let environment = AppStoreEnvironment(rawValue: name) else {
                    throw Problem(
                        description: "\(Variable.appStoreEnvironment.named) must be one of "
                            + AppStoreEnvironment.allCases.map(\.rawValue).joined(separator: ", ") + "; '\(name)' is not one")
                }
                config.environments.insert(environment)
            }
        }
        for file in list(options.appStoreRootCertificates, .appStoreRootCertificate) {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw Problem(description: "cannot read the App Store root certificate file '\(file)'")
            }
            do throws(IdentityError) {
                try config.addRootCertificate(data, field: "--app-store-root-certificate")
            } catch {
                throw Problem(description: "\(Variable.appStoreRootCertificate.named) '\(file)' \(error.reason)")
            }
        }
        return config
    }
}

extension RateLimit {
    /// `REQUESTS/SECONDS` (`10/60`: ten per client address per minute), as `--sign-in-limit` takes it.
    init(parsing text: String, variable: ServerSettings.Variable = .signInLimit) throws(ServerSettings.Problem) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let requests = Int(parts[0]), let window = Int(parts[1]), requests > 0, window > 0 else {
            throw ServerSettings.Problem(description: "\(variable.named) must be REQUESTS/SECONDS, e.g. 10/60")
        }
        self.init(requests: requests, window: TimeInterval(window))
    }
}
