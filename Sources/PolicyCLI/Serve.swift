import ArgumentParser
import Foundation
import Logging
import PolicyBundle
import Identity
import PolicyServer
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve decisions and sign-in over HTTP, reloading the policy folder as it changes.",
        discussion: """
            Every option may also come from the environment, as GATEHOUSE_ and its name in capitals with \
            underscores (--sign-in-limit: GATEHOUSE_SIGNIN_LIMIT; --trusted-proxy: GATEHOUSE_TRUSTED_PROXIES; \
            --retention: GATEHOUSE_RETENTION_DAYS; --operator-token-file, or GATEHOUSE_OPERATOR_TOKEN itself; flags \
            as =1); repeatable options take a comma-separated list. docs/server.md lists every one.

            The first line on standard output is `listening on http://HOST:PORT` with the address and port really \
            bound (--port 0 picks one). The database is created and migrated on first start: a SQLite file, or \
            with --database postgres://... a PostgreSQL database that several replicas may share. SIGHUP reloads \
            the policy folder; SIGTERM finishes requests in flight and exits. API: docs/server.md.

            Exit codes: 0 stopped; 1 the policy set does not load; 64 usage error; 70 the server could not start.
            """)

    @Option(help: "The policy set folder (watched for changes).")
    var policies: String?

    @Option(
        help: ArgumentHelp(
            "The identity database: a SQLite file (created if missing) or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (also postgresql://; options ?sslmode=disable|prefer|require&max_connections=N&schema=NAME).",
            valueName: "FILE_OR_URL"))
    var database: String?

    @Option(help: "Address to bind (default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to bind (default 8080; 0 picks a free one).")
    var port: Int?

    @Option(name: .customLong("apple-client-id"), help: "A Sign in with Apple client id (repeatable).")
    var appleClientIds: [String] = []

    @Option(name: .customLong("apple-jwks"), help: ArgumentHelp("Apple's JWKS: a file or a URL (default Apple's).", valueName: "FILE_OR_URL"))
    var appleJWKS: String?

    @Option(help: ArgumentHelp("A file holding the operator credential (16+ characters).", valueName: "FILE"))
    var operatorTokenFile: String?

    @Option(help: ArgumentHelp("Sign and serve the active version's bundle at /v1/bundle with this key (policy keygen).", valueName: "KEYFILE"))
    var bundleKey: String?

    @Flag(help: "Refuse reloads whose policy tests fail, not only ones that do not load.")
    var strictReload = false

    @Option(help: "Largest request body in bytes (default 1 MiB).")
    var bodyLimit: Int?

    @Option(
        name: .customLong("sign-in-limit"),
        help: ArgumentHelp(
            "Sign-in, PIN and device requests per client address per window (default 10/60).", valueName: "REQUESTS/SECONDS"))
    var signInLimit: String?

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp("A load balancer's IP address whose X-Forwarded-For names the client (repeatable).", valueName: "ADDR"))
    var trustedProxies: [String] = []
    @Option(help: ArgumentHelp("Seconds to read a whole request, header and body, from its first byte (default 10).", valueName: "SECONDS"))
    var readTimeout: Double?
    @Option(
        help: ArgumentHelp(
            "Seconds to answer a request once read; past it the answer is 503 storage_unavailable (default 15).", valueName: "SECONDS"))
    var requestTimeout: Double?

    @Option(
        help: ArgumentHelp(
            "Which decisions to record with their inputs: off (default), denied, all, or sample:R (a fraction R of all). Written in batches off the answer's path; rows expire with the logs' retention.",
            valueName: "off|denied|all|sample:R"))
    var decisionLog: String?

    @Flag(help: "Also record decisions made for no live session (no bearer, no subject id); off by default, as anyone can make them.")
    var decisionLogSignedOut = false

    @Option(
        help: ArgumentHelp(
            "Decision records per account and per client address per window; past it records are dropped and counted (default 600/60).",
            valueName: "REQUESTS/SECONDS"))
    var decisionLogLimit: String?

    @Option(
        name: .customLong("app-store-bundle-id"),
        help: "An app's bundle id whose App Store purchases change tiers (repeatable; purchases are off without one).")
    var appStoreBundleIds: [String] = []

    @Option(
        name: .customLong("app-store-environment"),
        help: ArgumentHelp("An App Store environment accepted (repeatable; default Production only).", valueName: "Production|Sandbox|Xcode"))
    var appStoreEnvironments: [String] = []

    @Option(
        name: .customLong("app-store-root-certificate"),
        help: ArgumentHelp("A DER or PEM root certificate trusted besides Apple Root CA - G3 (repeatable).", valueName: "FILE"))
    var appStoreRootCertificates: [String] = []

    @Flag(help: "Decide for the subject a request names when it has no bearer (a backend that authenticated its user itself).")
    var trustCallerSubjects = false

    @Option(
        name: .customLong("write-limit"),
        help: ArgumentHelp("Writes per account per window (default 30/60).", valueName: "REQUESTS/SECONDS"))
    var writeLimit: String?

    @Option(
        name: .customLong("source-write-limit"),
        help: ArgumentHelp("Writes per client address per window, whatever the accounts (default 120/60).", valueName: "REQUESTS/SECONDS"))
    var sourceWriteLimit: String?

    @Option(help: ArgumentHelp("Seconds between maintenance runs: expired rows purged, old logs expired (default 3600).", valueName: "SECONDS"))
    var maintenanceInterval: Double?

    @Option(name: .customLong("retention"), help: ArgumentHelp("Days audit and decision logs are kept (default 365, at least 30).", valueName: "DAYS"))
    var retentionDays: Int?

    @Option(name: .customLong("ipv6-prefix"), help: ArgumentHelp("IPv6 prefix length that keys per-client limits (default 64).", valueName: "BITS"))
    var ipv6Prefix: Int?

    @Option(help: ArgumentHelp("Connections open at once; more are closed at once (default half the open-file limit, at most 10000).", valueName: "N"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp("Connections one client (an IPv4 address, an IPv6 /64) may hold open; more are closed at once (default 64).", valueName: "N"))
    var maxConnectionsPerClient: Int?

    @Option(help: ArgumentHelp("App Store notifications per client, REQUESTS/SECONDS, before any verification (default 600/60).", valueName: "REQUESTS/SECONDS"))
    var notificationLimit: String?

    @Option(
        help: ArgumentHelp(
            "Seconds an access token works before the client must refresh it (default 900).", valueName: "SECONDS"))
    var accessTokenLifetime: Double?

    @Option(
        help: ArgumentHelp(
            "Seconds a rotated refresh token may be presented again by a racing client; other reuse ends the session (default 10).",
            valueName: "SECONDS"))
    var refreshGracePeriod: Double?

    @Option(
        help: ArgumentHelp(
            "Live sessions (and as many resources) kept in memory for bearer decisions, invalidated by every write that changes them (default 10000; 0: none).",
            valueName: "N"))
    var decisionCacheEntries: Int?

    @Option(
        help: ArgumentHelp(
            "A candidate policy set decided beside the live one after every answer, never served; disagreements counted in gatehouse_shadow_decisions_total and summarised at GET /v1/operator/shadow.",
            valueName: "DIR"))
    var shadow: String?

    @Flag(help: "Serve the operator console at /console (sign in with the operator credential; every action is an operator route).")
    var console = false

    func run() async throws {
        var options = ServerSettings.Options()
        options.policies = policies
        options.database = database
        options.host = host
        options.port = port
        options.appleClientIds = appleClientIds
        options.appleJWKS = appleJWKS
        options.operatorTokenFile = operatorTokenFile
        options.strictReload = strictReload
        options.bundleKey = bundleKey
        options.bodyLimit = bodyLimit
        options.signInLimit = signInLimit
        options.trustedProxies = trustedProxies
        options.readTimeout = readTimeout
        options.decisionLog = decisionLog
        options.decisionLogSignedOut = decisionLogSignedOut
        options.decisionLogLimit = decisionLogLimit
        options.appStoreBundleIds = appStoreBundleIds
        options.appStoreEnvironments = appStoreEnvironments
        options.appStoreRootCertificates = appStoreRootCertificates
        options.trustCallerSubjects = trustCallerSubjects
        options.writeLimit = writeLimit
        options.sourceWriteLimit = sourceWriteLimit
        options.maintenanceInterval = maintenanceInterval
        options.retentionDays = retentionDays
        options.ipv6Prefix = ipv6Prefix
        options.maxConnections = maxConnections
        options.maxConnectionsPerClient = maxConnectionsPerClient
        options.notificationLimit = notificationLimit
        options.requestTimeout = requestTimeout
        options.accessTokenLifetime = accessTokenLifetime
        options.refreshGracePeriod = refreshGracePeriod
        options.decisionCacheEntries = decisionCacheEntries
        options.shadow = shadow
        options.console = console
        let settings: ServerSettings
        do {
            settings = try ServerSettings.resolve(options, environment: ProcessInfo.processInfo.environment)
        } catch {
            writeError("error: \(error.description)")
            throw ExitCode(64)
        }
        if let file = options.bundleKey ?? ProcessInfo.processInfo.environment[ServerSettings.Variable.bundleKey.rawValue],
            let exposure = BundleSigningKey.exposure(ofKeyFile: file)
        {
            writeError("warning: \(exposure)")
        }
        // Traces (OTEL_* variables, off unless an OTLP endpoint is given), before the logging system so that every log
        // line of a traced request carries its trace_id and span_id.
        let tracing: ServerTracing.Running?
        do {
            tracing = try ServerTracing.start(environment: ProcessInfo.processInfo.environment)
        } catch {
            writeError("error: \(error.description)")
            throw ExitCode(64)
        }
        LoggingSystem.bootstrap(
            { label, provider in ServerLogHandler(label: label, metadataProvider: provider, logLevel: .info) },
            metadataProvider: tracing?.metadataProvider)
        let server: GatehouseServer
        do {
            server = try GatehouseServer(settings: settings, checks: .verification)
        } catch let error as GatehouseServer.StartError {
            writeError("error: \(error.description)")
            throw Exit.policyErrors
        } catch {
            writeError("error: cannot open the database '\(IdentityStoreLocation.shown(settings.database))': \(error)")
            throw ExitCode(70)
        }
        let app = buildApplication(server, watch: true, reloadOnHangup: true) { host, port in
            let shown = host.contains(":") ? "[\(host)]" : host
            FileHandle.standardOutput.write(Data("listening on http://\(shown):\(port)\n".utf8))
        }
        let group = ServiceGroup(
            configuration: .init(
                // The exporter first, so it stops last: the spans of the last requests are sent.
                services: (tracing.map { [$0.service] } ?? []) + ServingWhenStoreIsReady.services(store: server.store, app: app),
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: server.logger))
        do {
            try await group.run()
        } catch let error as ServingWhenStoreIsReady.NotReady {
            writeError("error: cannot open the database '\(server.store.description)': \(error.description)")
            throw ExitCode(70)
        }
    }
}
