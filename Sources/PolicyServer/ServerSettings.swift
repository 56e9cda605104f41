import Foundation
import Identity

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
    /// How often the policy folder is looked at, and how long it must stay unchanged before a reload.
    public var watchInterval: Duration = .milliseconds(250)
    public var settleTime: Duration = .milliseconds(500)
    /// Sign-in, PIN and device routes: requests per client address per window.
    public var signInLimit = RateLimit(requests: 10, window: 60)
    /// Load balancers (exact IP addresses) whose `X-Forwarded-For` names the client: behind one, every
    /// client would otherwise share the balancer's address in the per-client limits.
    public var trustedProxies: Set<String> = []

    public init(policies: String, database: String) {
        self.policies = policies
        self.database = database
    }

    /// The variable each option falls back to.
    public enum Variable: String, CaseIterable, Sendable {
        case policies = "GATEHOUSE_POLICIES"
        case database = "GATEHOUSE_DATABASE"
        case host = "GATEHOUSE_HOST"
        case port = "GATEHOUSE_PORT"
        case appleClientId = "GATEHOUSE_APPLE_CLIENT_ID"
        case appleJWKS = "GATEHOUSE_APPLE_JWKS"
        case operatorTokenFile = "GATEHOUSE_OPERATOR_TOKEN_FILE"
        case operatorToken = "GATEHOUSE_OPERATOR_TOKEN"
        case strictReload = "GATEHOUSE_STRICT_RELOAD"
        case bodyLimit = "GATEHOUSE_BODY_LIMIT"
        case signInLimit = "GATEHOUSE_SIGNIN_LIMIT"
        case trustedProxies = "GATEHOUSE_TRUSTED_PROXIES"
        case readTimeout = "GATEHOUSE_READ_TIMEOUT"
        case requestTimeout = "GATEHOUSE_REQUEST_TIMEOUT"
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
        /// Seconds (a fraction allowed).
        public var requestTimeout: Double?
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
            throw Problem(description: "--policies (or \(Variable.policies.rawValue)) is required")
        }
        guard let database = options.database ?? env(.database) else {
            throw Problem(description: "--database (or \(Variable.database.rawValue)) is required")
        }
        do throws(IdentityError) {
            _ = try IdentityStoreLocation.parse(database, field: "--database")
        } catch {
            throw Problem(description: "--database (or \(Variable.database.rawValue)) \(error.reason)")
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
            throw Problem(description: "--trusted-proxy (or \(Variable.trustedProxies.rawValue)) must be IP addresses; '\(proxy)' is not one")
        }
        s.trustedProxies = Set(proxies.compactMap { ForwardedClient.canonical($0) })
        if let seconds = options.readTimeout {
            guard seconds > 0, seconds.isFinite else { throw Problem(description: "--read-timeout must be a positive number of seconds") }
            s.readTimeout = .milliseconds(Int64(seconds * 1000))
        } else if let text = env(.readTimeout) {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw Problem(description: "\(Variable.readTimeout.rawValue) must be a positive number of seconds")
            }
            s.readTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let seconds = options.requestTimeout {
            guard seconds > 0, seconds.isFinite else { throw Problem(description: "--request-timeout must be a positive number of seconds") }
            s.requestTimeout = .milliseconds(Int64(seconds * 1000))
        } else if let text = env(.requestTimeout) {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw Problem(description: "\(Variable.requestTimeout.rawValue) must be a positive number of seconds")
            }
            s.requestTimeout = .milliseconds(Int64(seconds * 1000))
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
}

extension RateLimit {
    /// `REQUESTS/SECONDS` (`10/60`: ten per client address per minute), as `--sign-in-limit` takes it.
    init(parsing text: String) throws(ServerSettings.Problem) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let requests = Int(parts[0]), let window = Int(parts[1]), requests > 0, window > 0 else {
            throw ServerSettings.Problem(
                description: "--sign-in-limit (or \(ServerSettings.Variable.signInLimit.rawValue)) must be REQUESTS/SECONDS, e.g. 10/60")
        }
        self.init(requests: requests, window: TimeInterval(window))
    }
}
