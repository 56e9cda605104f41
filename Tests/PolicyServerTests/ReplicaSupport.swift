import Foundation
import Testing
import GatehouseTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the replicas of a test keep their identity state: one database every replica opens.
enum SharedStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// One SQLite file (WAL) opened by every replica: works today, on one machine.
    case sqlite
    /// A fresh database in the PostgreSQL server named by `GATEHOUSE_TEST_POSTGRES_URL`.
    case postgres

    var testDescription: String { rawValue }

    /// The stores the tests run on here: SQLite always, PostgreSQL when `TestPostgres.isRunnable`.
    static var runnable: [SharedStore] { get async { (await TestPostgres.isRunnable) ? [.sqlite, .postgres] : [.sqlite] } }
}

/// A failure of the harness itself (a server that did not start, a database that could not be made),
/// thrown so the test fails with the reason.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The PostgreSQL the tests may use, by the contract shared with the store's own tests: its URL comes
/// from `GATEHOUSE_TEST_POSTGRES_URL`. The PostgreSQL variants run only when it is set and this build's
/// `policy serve` takes a postgres URL; otherwise `ReplicaTests.thePostgreSQLVariantsRan` is skipped
/// with the reason, or fails under `CI=true` when the URL is missing.
enum TestPostgres {
    static let variable = "GATEHOUSE_TEST_POSTGRES_URL"

    static let url: String? = ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }

    static let isCI = ProcessInfo.processInfo.environment["CI"]?.lowercased() == "true"

    /// Whether this build's `policy serve` takes a `postgres://` database: its help says so once the
    /// PostgreSQL store is in (until then a postgres URL would be taken for a SQLite file name).
    /// Asked once, by the first test that needs it.
    static var serverAcceptsURL: Bool { get async { await helpMentionsPostgres.value } }
    private static let helpMentionsPostgres = Task {
        guard let help = try? await Program(ServedProcess.binary, ["serve", "--help"]).run() else { return false }
        return help.standardOutput.lowercased().contains("postgres")
    }

    /// The PostgreSQL variants run.
    static var isRunnable: Bool {
        get async {
            guard url != nil else { return false }
            return await serverAcceptsURL
        }
    }
    /// They must run and cannot: CI without the URL.
    static var isMissingInCI: Bool { isCI && url == nil }

    static var skipReason: String {
        if url == nil {
            return "PostgreSQL variants of ReplicaTests and LoadBalancerTests did not run: \(variable) is not set "
                + "(export \(variable)=$(scripts/postgres-test-cluster.sh start))"
        }
        return "PostgreSQL variants of ReplicaTests and LoadBalancerTests did not run: this `policy serve` does not "
            + "accept a postgres:// database yet (no PostgreSQL in its --help)"
    }

    /// The server URL to make test databases in.
    static func required() async throws -> String {
        guard let url, await serverAcceptsURL else { throw HarnessError(skipReason) }
        return url
    }

    /// `psql` on the path or in Debian's place.
    static var psql: String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"] {
            let candidate = dir + "/psql"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "/usr/bin/psql"
    }

    /// Runs one SQL statement through psql against `url`; throws with psql's message if it fails.
    static func execute(_ sql: String, on url: String) async throws {
        let run: Finished
        do { run = try await Program(path: psql, [url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql]).run() } catch {
            throw HarnessError("cannot run psql at \(psql): \(error)")
        }
        guard run.status == 0 else { throw HarnessError("psql '\(sql)' failed: \(run.standardError)") }
    }

    /// `url` with its database (the path) replaced by `name`.
    static func databaseURL(_ url: String, named name: String) throws -> String {
        guard var parts = URLComponents(string: url) else { throw HarnessError("\(variable) is not a URL") }
        parts.path = "/" + name
        guard let text = parts.string else { throw HarnessError("cannot build a URL for database \(name)") }
        return text
    }
}

/// One database for one test, made fresh (random name) and dropped by `drop()`.
struct SharedDatabase: Sendable {
    let store: SharedStore
    /// The file path or the postgres URL of the database.
    let location: String
    /// Appended to a postgres URL in what the replicas are given (`?lock_timeout=...`).
    var options = ""
    /// Whether a postgres URL gets the tests' generous pool and connect deadlines (`TestDeadlines.postgres`); off for
    /// the tests of the shipped deadlines themselves (an outage answered within them).
    var generousDeadlines = true
    /// What `policy serve --database` is given.
    var served: String { store == .postgres && generousDeadlines ? TestDeadlines.postgres(location + options) : location + options }
    private let server: String?
    private let name: String?

    /// A fresh database; on PostgreSQL in the server `server` names (default: `GATEHOUSE_TEST_POSTGRES_URL`).
    static func make(_ store: SharedStore, in dir: URL, server: String? = nil) async throws -> SharedDatabase {
        switch store {
        case .sqlite:
            return SharedDatabase(store: store, location: dir.appendingPathComponent("shared.sqlite").path, server: nil, name: nil)
        case .postgres:
            let server = if let server { server } else { try await TestPostgres.required() }
            let name = "gatehouse_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            try await TestPostgres.execute("CREATE DATABASE \(name)", on: server)
            return SharedDatabase(store: store, location: try TestPostgres.databaseURL(server, named: name), server: server, name: name)
        }
    }

    /// Drops a PostgreSQL database (closing what is still connected); a SQLite file goes with its folder.
    func drop() async {
        guard let server, let name else { return }
        try? await TestPostgres.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server)
    }
}

/// An answer from a replica, as the tests read it.
struct Answer: Sendable {
    var status: Int
    var headers: [String: String]
    var text: String

    var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
    func string(_ key: String) -> String? { object[key] as? String }
    /// The problem's stable `code`, for errors.
    var code: String? { string("code") }
    func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
}

/// HTTP to the replicas: one session with room for concurrent requests to one host.
enum Client {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

    static func call(
        _ method: String, _ base: URL, _ path: String, body: String? = nil, bearer: String? = nil, timeout: TimeInterval = 60
    ) async throws -> Answer {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!.absoluteURL, timeoutInterval: timeout)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw HarnessError("\(method) \(path): not an HTTP answer") }
        return Answer(status: http.statusCode, headers: (http.allHeaderFields as? [String: String]) ?? [:], text: String(decoding: data, as: UTF8.self))
    }

    /// A JSON string literal for `text` (test values only: names, PINs, tokens).
    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes]), as: UTF8.self)
            .dropFirst().dropLast().description
    }
}

/// Several `policy serve` processes on one policy folder and one database, each on a free loopback port.
///
/// Started one after another (the first creates and migrates the database); stopped by `stop()`, which
/// also drops the database and removes the folder. Every wait is bounded.
final class Replicas {
    let dir: URL
    let policies: URL
    let database: SharedDatabase
    let operatorToken = "operator-" + UUID().uuidString
    /// Options every replica gets beyond the folder, the database and the operator token.
    let arguments: [String]
    /// A control for the tests: each replica gets a SQLite file of its own (nothing shared).
    let databasePerReplica: Bool
    private(set) var processes: [RunningProgram] = []
    private(set) var bases: [URL] = []

    /// The environment every replica gets: the sign-in limit raised so the tests reach the identity
    /// layer's own PIN counting (the per-address limiter is per process and would answer 429 first).
    static let environment = ServedProcess.environment.merging(["GATEHOUSE_SIGNIN_LIMIT": "100000/60"]) { _, replica in replica }

    private init(dir: URL, policies: URL, database: SharedDatabase, arguments: [String], databasePerReplica: Bool) {
        self.dir = dir
        self.policies = policies
        self.database = database
        self.arguments = arguments
        self.databasePerReplica = databasePerReplica
    }

    /// Runs `body` with `count` replicas over a fresh database of `store`, and always cleans up.
    static func with<T>(
        _ count: Int = 2, store: SharedStore, policySet: String = "contacasal", arguments: [String] = [],
        databasePerReplica: Bool = false, server: String? = nil, databaseOptions: String = "", shippedDeadlines: Bool = false,
        _ body: (Replicas) async throws -> T
    ) async throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-replicas-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let policies = dir.appendingPathComponent(policySet)
        try FileManager.default.copyItem(at: TestServer.root.appendingPathComponent("policies/\(policySet)"), to: policies)
        var database: SharedDatabase
        do {
            database = try await SharedDatabase.make(store, in: dir, server: server)
            database.options = databaseOptions
            database.generousDeadlines = !shippedDeadlines
        } catch {
            try? FileManager.default.removeItem(at: dir)
            throw error
        }
        let replicas = Replicas(
            dir: dir, policies: policies, database: database, arguments: arguments, databasePerReplica: databasePerReplica && store == .sqlite)
        do {
            for _ in 0..<count { try await replicas.startOne() }
            let result = try await body(replicas)
            await replicas.stop()
            return result
        } catch {
            await replicas.stop()
            throw error
        }
    }

    var operatorTokenFile: URL { dir.appendingPathComponent("operator-token") }

    /// Starts one more replica; its standard error goes to `replica-N.log` in the folder.
    func startOne() async throws {
        if !FileManager.default.fileExists(atPath: operatorTokenFile.path) {
            try Data(operatorToken.utf8).write(to: operatorTokenFile)
        }
        let index = processes.count
        let log = dir.appendingPathComponent("replica-\(index).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = try await Program(
            ServedProcess.binary,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--policies", policies.path,
                "--database", databasePerReplica ? database.location + "-\(index)" : database.served,
                "--operator-token-file", operatorTokenFile.path,
            ] + arguments,
            environment: .only(Self.environment)
        ).start(errorLog: log)
        processes.append(process)
        let line = try? await process.nextLine(within: .seconds(60))
        guard let line, line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            let logText = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw HarnessError("replica \(index) did not start on \(database.store) (first line: \(line ?? "none")); its log: \(logText.suffix(2000))")
        }
        bases.append(url)
    }

    /// SIGKILL, as a crash or an OOM kill would: no shutdown, no flush.
    func crash(_ index: Int) async {
        let process = processes[index]
        guard process.isRunning else { return }
        process.kill()
        await process.wait(within: .seconds(60))
    }

    /// SIGTERM to every replica still running (bounded wait, then SIGKILL), the database dropped, the folder removed.
    func stop() async {
        for process in processes { process.signal(SIGTERM) }
        for process in processes { await process.stop(grace: .seconds(5)) }
        await database.drop()
        try? FileManager.default.removeItem(at: dir)
    }

    // MARK: flows the tests share

    /// Registers `username` with `pin` through replica `on`: the token pair's fields.
    func register(_ username: String, pin: String, on index: Int = 0) async throws -> (access: String, refresh: String, userId: String) {
        let answer = try await Client.call(
            "POST", bases[index], "/v1/auth/pin/register", body: #"{"username": \#(Client.quoted(username)), "pin": \#(Client.quoted(pin))}"#)
        guard answer.status == 201, let access = answer.string("accessToken"), let refresh = answer.string("refreshToken"),
            let user = answer.string("userId")
        else { throw HarnessError("register \(username): \(answer.status) \(answer.text)") }
        return (access, refresh, user)
    }

    /// An anonymous session through replica `on`.
    func anonymous(on index: Int = 0) async throws -> (access: String, refresh: String, userId: String) {
        let answer = try await Client.call("POST", bases[index], "/v1/auth/anonymous")
        guard answer.status == 201, let access = answer.string("accessToken"), let refresh = answer.string("refreshToken"),
            let user = answer.string("userId")
        else { throw HarnessError("anonymous sign-in: \(answer.status) \(answer.text)") }
        return (access, refresh, user)
    }

    /// The signed-in user's GDPR export through replica `on` (needs a recent PIN or device verification).
    func export(_ access: String, on index: Int) async throws -> [String: Any] {
        let answer = try await Client.call("GET", bases[index], "/v1/me/export", bearer: access)
        guard answer.status == 200 else { throw HarnessError("export: \(answer.status) \(answer.text)") }
        return answer.object
    }
}

/// A test's bound on repetitions from the environment (`GATEHOUSE_RACE_RUNS=100`), else `default`.
func runsFromEnvironment(_ name: String, default value: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { min(max($0, 1), 10_000) } ?? value
}
