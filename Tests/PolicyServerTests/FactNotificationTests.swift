import Foundation
import Gatehouse
import PolicyEngine
import PolicyServer
import Synchronization
import Testing

@testable import IdentityPostgres

/// Two replicas on one PostgreSQL database, in process: each its own pool, identity service and decision cache. A
/// write on one reaches the other's cache through `LISTEN`/`NOTIFY` (issue 26); while the listener is down the other
/// trusts a cached fact for `FactChanges.stalenessBound` only.
@Suite(.serialized) struct FactNotificationTests {
    struct Replica {
        let store: PostgresStore
        let identity: IdentityService
        let gate: GatehouseService
    }

    static let app = Resource(type: "app")

    /// Two replicas on a fresh database, with their pools running for `body`.
    static func withReplicas(_ body: @Sendable ([Replica], SharedDatabase) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("facts-\(UUID().uuidString)")
        let database = try SharedDatabase.make(.postgres, in: dir)
        defer { database.drop() }
        // A pool and a wait for it that a whole test run's load does not exhaust (the assertions are about facts, not speed).
        guard case .postgres(let location) = try IdentityStoreLocation.parse(database.location + "?max_connections=8&pool_timeout=30000") else {
            throw HarnessError("not a postgres URL")
        }
        guard case .success(let (policy, _)) = PolicyReloader.initialPolicy(
            directory: TestServer.root.appendingPathComponent("policies/research-crawler").path, strict: false)
        else { throw HarnessError("the policy does not load") }
        var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["com.example.app"]))
        configuration.pin = .unsafeForTesting(rounds: 1_000)
        let stores = [PostgresStore(configuration: location), PostgresStore(configuration: location)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { try await store.run() } }
            defer { group.cancelAll() }
            try await stores[0].migrate()
            let replicas = stores.map { store in
                let identity = IdentityService(store: store, configuration: configuration, jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))
                return Replica(store: store, identity: identity, gate: GatehouseService(policy: policy, identity: identity))
            }
            for replica in replicas { try await waitUntil("the listener is up") { replica.identity.factChanges.heardFromOthers } }
            try await body(replicas, database)
        }
    }

    /// Polls `condition` every 5 ms, at most 30 s (a bound on the loop, not a timing claim).
    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<6_000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw HarnessError("gave up waiting: \(what)")
    }

    /// Sign-out on replica A, 100 times: replica B, which had the session cached, refuses the token; the delay from
    /// A's acknowledgement to B's refusal is printed for the note (never asserted).
    @Test(.enabled(if: TestPostgres.isRunnable, Comment(rawValue: TestPostgres.skipReason)))
    func aSignOutOnOneReplicaIsRefusedOnTheOther() async throws {
        try await Self.withReplicas { replicas, _ in
            let (a, b) = (replicas[0], replicas[1])
            var delays: [Double] = []
            for _ in 0..<100 {
                let user = try await a.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
                #expect(try await !b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
                #expect(try await !b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
                try await a.identity.signOut(accessToken: user.accessToken)
                let acknowledged = ContinuousClock.now
                try await Self.waitUntil("replica B refuses the signed-out token") {
                    try await b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected
                }
                delays.append(Double((ContinuousClock.now - acknowledged).components.attoseconds) / 1e15
                    + Double((ContinuousClock.now - acknowledged).components.seconds) * 1000)
                // Replica A itself refuses at once: its own write dropped the fact before returning.
                #expect(try await a.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            }
            let sorted = delays.sorted()
            print("sign-out on A to refusal on B over 100 trials: p50 \(sorted[49]) ms, p99 \(sorted[98]) ms, max \(sorted[99]) ms")
        }
    }

    /// The listener's connection cut: B says it does not hear A (what /readyz and /metrics show), a write on A made
    /// while it is down is refused on B once the staleness bound has passed, and the listener comes back by itself
    /// (then a write is heard again).
    @Test(.enabled(if: TestPostgres.isRunnable, Comment(rawValue: TestPostgres.skipReason)))
    func aCutListenerBoundsStalenessAndRecovers() async throws {
        try await Self.withReplicas { replicas, database in
            let (a, b) = (replicas[0], replicas[1])
            let user = try await a.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            #expect(try await !b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            // Cut every listener's connection from the database's side, and keep cutting until B notices.
            try await Self.waitUntil("replica B notices its listener is gone") {
                try TestPostgres.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
                    on: database.location)
                return !b.identity.factChanges.heardFromOthers
            }
            try await a.identity.signOut(accessToken: user.accessToken)
            let acknowledged = ContinuousClock.now
            try await Self.waitUntil("replica B refuses within the staleness bound") {
                try await b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected
            }
            print("with the listener cut: refusal on B \(ContinuousClock.now - acknowledged) after the sign-out on A (bound \(FactChanges.stalenessBound))")
            try await Self.waitUntil("the listener reconnects") { b.identity.factChanges.heardFromOthers }
            let second = try await a.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            #expect(try await !b.gate.resolve(token: second.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            try await a.identity.signOut(accessToken: second.accessToken)
            try await Self.waitUntil("replica B hears the next sign-out") {
                try await b.gate.resolve(token: second.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected
            }
        }
    }
}
