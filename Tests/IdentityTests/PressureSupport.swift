import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import Identity
@testable import IdentityPostgres
import GatehouseTestSupport

/// A PostgreSQL cluster of one test's own (`scripts/postgres-test-cluster.sh` with a state file of its own),
/// for what must not touch the shared one: stopping the server, TLS.
final class PrivateCluster: Sendable {
    static let script = Repository.url("scripts/postgres-test-cluster.sh").path
    let state: String
    let url: String

    private init(state: String, url: String) {
        self.state = state
        self.url = url
    }

    /// Starts a cluster; with `sslDir` (server.crt and server.key) it takes TLS.
    static func start(sslDir: String? = nil) async throws -> PrivateCluster {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-private-\(UUID().uuidString).state").path
        var environment = ["GATEHOUSE_PG_STATE": state]
        if let sslDir { environment["GATEHOUSE_PG_SSL_DIR"] = sslDir }
        let url = try await run(["start"], environment: environment).trimmingCharacters(in: .whitespacesAndNewlines)
        return PrivateCluster(state: state, url: url)
    }

    func stopServer() async throws { _ = try await Self.run(["stop-server"], environment: ["GATEHOUSE_PG_STATE": state]) }
    func startServer() async throws { _ = try await Self.run(["start-server"], environment: ["GATEHOUSE_PG_STATE": state]) }
    func stop() async { _ = try? await Self.run(["stop"], environment: ["GATEHOUSE_PG_STATE": state]) }

    var port: Int { URLComponents(string: url)?.port ?? 0 }

    /// The cluster's location, as the store takes it.
    func location(_ edit: (inout PostgresLocation) -> Void = { _ in }) throws -> PostgresLocation {
        guard case .postgres(var location) = try IdentityStoreLocation.parse(url) else { throw HarnessFailure("not a postgres URL: \(url)") }
        location.maxConnections = 4
        edit(&location)
        return location
    }

    static func run(_ arguments: [String], environment: [String: String]) async throws -> String {
        try await runOffThePool(URL(fileURLWithPath: "/bin/bash"), [script] + arguments, environment: environment)
    }
}

/// `program`'s standard output (`Program.output`, GatehouseTestSupport).
func runOffThePool(_ program: URL, _ arguments: [String], environment: [String: String] = [:], in directory: URL? = nil) async throws -> String {
    try await Program(program, arguments, environment: .inherited(adding: environment), in: directory).output()
}

struct HarnessFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The outcome of `body`, or nil when it has not finished within `seconds` (it is cancelled and left behind,
/// so a body that ignores cancellation cannot hold the test). A bound on a test, not a measurement.
func bounded<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
    let once = FirstAnswer<T>()
    let value: T? = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        once.set(continuation)
        once.work(Task { once.answer(await body()) })
        Task {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            once.answer(nil)
        }
    }
    if value == nil { once.cancelWork() }
    return value
}

/// The first of several answers, for `bounded`.
final class FirstAnswer<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T?, Never>?, work: Task<Void, Never>?)>((nil, nil))
    func set(_ continuation: CheckedContinuation<T?, Never>) { state.withLock { $0.continuation = continuation } }
    func work(_ task: Task<Void, Never>) { state.withLock { $0.work = task } }
    func answer(_ value: T?) {
        let continuation = state.withLock { s in
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume(returning: value)
    }
    func cancelWork() { state.withLock { $0.work?.cancel() } }
}

/// The wire code of the identity error `body` throws ("ok" when it returns, "other" for another error).
func outcomeCode(_ body: () async throws -> some Any) async -> String {
    do {
        _ = try await body()
        return "ok"
    } catch let error as IdentityError {
        return error.code.rawValue
    } catch {
        return "other: \(error)"
    }
}

/// Repetitions of a race from `GATEHOUSE_RACE_RUNS` (the note's 100), else `default`.
func raceRuns(default value: Int) -> Int {
    ProcessInfo.processInfo.environment["GATEHOUSE_RACE_RUNS"].flatMap(Int.init).map { min(max($0, 1), 10_000) } ?? value
}

extension Harness {
    /// A second service on the same database (another replica): its own in-memory state, the same rows.
    func replica() async throws -> IdentityService {
        let store: any IdentityStore
        switch kind {
        case .sqlite: store = SQLiteStore(database)
        case .postgres: store = try await TestPostgres.makeStore(schema: postgres!.configuration.schema!, create: false, migrate: false)
        }
        return IdentityService(store: store, configuration: service.configuration, jwksFetcher: fetcher, now: clock.source)
    }

    /// The failures counted in a guess window (`guessLimit`), 0 when it has no row.
    func guessFailures(_ scope: String) async throws -> Int {
        try await service.store.read { tx in try await tx.fetchOne(GuessLimitRow.self, "scope", .text(scope)) }?.failures ?? 0
    }
}
