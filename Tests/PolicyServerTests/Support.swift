import Foundation
import Gatehouse
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PolicyCLI
import PolicyServer
import Testing
import GatehouseTestSupport

/// A server over a copy of a shipped policy set and a fresh database, in a temporary folder.
struct TestServer {
    static let root = Repository.root
    let dir: URL
    let policies: URL
    let server: GatehouseServer

    init(
        policySet: String = "research-crawler", database: URL? = nil, logger: Logger? = nil, clockStoppedAt: Date? = nil,
        configure: (inout ServerSettings) -> Void = { _ in }
    ) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-serve-\(UUID().uuidString)")
        policies = dir.appendingPathComponent(policySet)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("policies/\(policySet)"), to: policies)
        var settings = ServerSettings(policies: policies.path, database: (database ?? dir.appendingPathComponent("identity.sqlite")).path)
        settings.port = 0
        // Most tests post subjects of their own, as a backend would (F10 tests the refusal without it).
        settings.trustCallerSubjects = true
        TestDeadlines.apply(to: &settings)
        configure(&settings)
        var identity = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["com.example.app"]))
        identity.pin = .unsafeForTesting(rounds: 1_000)
        var quiet = Logger(label: "gatehouse-test")
        quiet.logLevel = .critical
        let now: @Sendable () -> Date
        if let clockStoppedAt { now = { clockStoppedAt } } else { now = { Date() } }
        server = try GatehouseServer(
            settings: settings, checks: .verification, logger: logger ?? quiet, identity: identity, jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")),
            now: now)
    }

    /// An application over the router alone (no watcher), for `.router` and `.live` tests.
    var app: some ApplicationProtocol { buildApplication(server, watch: false) }

    /// Replaces one policy file's text.
    func write(_ file: String, _ text: String) throws {
        try Data(text.utf8).write(to: policies.appendingPathComponent(file))
    }

    func read(_ file: String) throws -> String {
        try String(contentsOf: policies.appendingPathComponent(file), encoding: .utf8)
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }
    /// The body as a JSON object.
    var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
}

func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

extension TestDeadlines {
    /// Sets the test's generous deadlines on an in-process server's settings (a test's `configure` may set its own).
    static func apply(to settings: inout ServerSettings) {
        settings.requestTimeout = request
        settings.readTimeout = read
    }
}

/// The `policy` executable and the first line a server prints.
enum ServedProcess {
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("policy").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("policy")
    }

    /// What every served process gets unless a test says otherwise: caller-asserted subjects trusted (the tests post
    /// their own, as a backend would), and write quotas out of the way of tests that write in bulk (FindingsTests
    /// test the quotas).
    static let environment = [
        "GATEHOUSE_TRUST_CALLER_SUBJECTS": "1", "GATEHOUSE_WRITE_LIMIT": "1000000/60", "GATEHOUSE_SOURCE_WRITE_LIMIT": "1000000/60",
    ].merging(TestDeadlines.environment) { given, _ in given }

    /// Starts `policy serve` with `arguments` on a free loopback port; returns the child and its base URL.
    static func start(_ arguments: [String], environment: [String: String] = [:]) async throws -> (RunningProgram, URL) {
        let process = try await Program(
            binary, ["serve", "--host", "127.0.0.1", "--port", "0"] + arguments,
            environment: .only(ServedProcess.environment.merging(environment) { _, given in given })
        ).start()
        let line = try await process.nextLine(within: .seconds(60))
        guard line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            process.kill()
            throw CancellationError()
        }
        return (process, url)
    }

    /// SIGTERM, then a bounded wait for the exit (SIGKILL after it).
    static func stop(_ process: RunningProgram) async throws {
        await process.stop()
    }
}
