import AppStoreTestSupport
import Foundation
import GatehouseTestSupport
import GatehouseRaceSupport
import PolicyEngine
import PolicyCLI
import PolicyServer
import Synchronization
import Testing

@testable import Gatehouse
@testable import IdentityPostgres

/// Two replicas on one PostgreSQL database, in process: each its own pool, identity service and decision cache. A
/// write on one reaches the other's cache through `LISTEN`/`NOTIFY` (issue 26); while the listener is down the other
/// trusts a cached fact for `FactChanges.stalenessBound` only.
@Suite(.serialized, .startsServers) struct FactNotificationTests {
    struct Replica {
        let store: PostgresStore
        let identity: IdentityService
        let gate: GatehouseService
    }

    static let app = Resource(type: "app")

    /// What `replica`'s decide road ahead would resolve from memory for `token` now (`decideFromMemory`'s resolution), or nil.
    static func fromMemory(_ replica: Replica, _ token: String, _ action: String, _ resource: Resource) -> ResolvedRequest? {
        replica.gate.subjects.resolvedFromMemory(
            Request(action: action, resource: resource), token: token, at: replica.gate.identity.clock(), by: replica.gate.policy)
    }

    /// Two replicas on a fresh database, with their pools running for `body`; on `clock` when given (else the wall clock),
    /// their configuration changed by `configure`.
    static func withReplicas(
        clock: RaceClock? = nil, configure: (inout IdentityConfiguration) -> Void = { _ in },
        _ body: @Sendable ([Replica], SharedDatabase) async throws -> Void
    ) async throws {
        // One permit of the run's PostgreSQL gate for the two replicas, as the identity harness takes one per test case.
        await PostgresTestGate.shared.acquire()
        do {
            try await withReplicasHoldingTheGate(clock: clock, configure: configure, body)
        } catch {
            await PostgresTestGate.shared.release()
            throw error
        }
        await PostgresTestGate.shared.release()
    }

    private static func withReplicasHoldingTheGate(
        clock: RaceClock?, configure: (inout IdentityConfiguration) -> Void, _ body: @Sendable ([Replica], SharedDatabase) async throws -> Void
    ) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("facts-\(UUID().uuidString)")
        let database = try await SharedDatabase.make(.postgres, in: dir)
        do {
            try await withReplicas(on: database, clock: clock, configure: configure, body)
        } catch {
            await database.drop()
            throw error
        }
        await database.drop()
    }

    private static func withReplicas(
        on database: SharedDatabase, clock: RaceClock?, configure: (inout IdentityConfiguration) -> Void,
        _ body: @Sendable ([Replica], SharedDatabase) async throws -> Void
    ) async throws {
        // A pool and a wait for it that a whole test run's load does not exhaust (the assertions are about facts, not speed).
        guard case .postgres(let location) = try IdentityStoreLocation.parse(database.location + "?max_connections=8&pool_timeout=30000") else {
            throw HarnessError("not a postgres URL")
        }
        guard case .success(let (policy, _)) = PolicyReloader.initialPolicy(
            directory: TestServer.root.appendingPathComponent("policies/research-crawler").path, strict: false, checks: .verification)
        else { throw HarnessError("the policy does not load") }
        var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["com.example.app"]))
        configuration.pin = .unsafeForTesting(rounds: 1_000)
        configure(&configuration)
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        let stores = [PostgresStore(configuration: location), PostgresStore(configuration: location)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { try await store.run() } }
            defer { group.cancelAll() }
            try await stores[0].migrate()
            let replicas = stores.map { store in
                // Apple's keys are the race support's, so its signed Apple notices verify.
                let identity = IdentityService(store: store, configuration: configuration, jwksFetcher: RaceApple.shared.jwksFetcher, now: now)
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
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable })
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
                // Neither answers the token from memory (the road ahead) once it is refused.
                #expect(Self.fromMemory(a, user.accessToken, "ai_suggestions", Self.app) == nil)
                #expect(Self.fromMemory(b, user.accessToken, "ai_suggestions", Self.app) == nil)
            }
            let sorted = delays.sorted()
            print("sign-out on A to refusal on B over 100 trials: p50 \(sorted[49]) ms, p99 \(sorted[98]) ms, max \(sorted[99]) ms")
        }
    }

    /// The listener's connection cut: B says it does not hear A (what /readyz and /metrics show), a write on A made
    /// while it is down is refused on B once the staleness bound has passed, and the listener comes back by itself
    /// (then a write is heard again).
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable })
    func aCutListenerBoundsStalenessAndRecovers() async throws {
        try await Self.withReplicas { replicas, database in
            let (a, b) = (replicas[0], replicas[1])
            let user = try await a.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            #expect(try await !b.gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            // Cut every listener's connection from the database's side, and keep cutting until B notices.
            try await Self.waitUntil("replica B notices its listener is gone") {
                try await TestPostgres.execute(
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

    /// How many times each write is raced on PostgreSQL: 100 with GATEHOUSE_RACE_RUNS=100 (the note's figure), fewer by
    /// default (20; 100 took 98 s for the 13 writes on a loaded 2-core machine) so the suite stays short.
    static let raceRuns = ProcessInfo.processInfo.environment["GATEHOUSE_RACE_RUNS"].flatMap(Int.init) ?? 20

    static func milliseconds(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }

    /// For every invalidating write (the SQLite race tests' list), `raceRuns` times on two replicas: a decision on
    /// replica A (the writer) that starts after the write is acknowledged never sees the old fact, and replica B, which
    /// had the old fact cached, shows the new one once A's notification arrives (polled in a bounded loop; the delays
    /// are printed for the note, never asserted). Decisions for the same token race the write on both replicas.
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable }, arguments: InvalidatingWrite.all)
    func aWriteIsSeenAtOnceOnItsReplicaAndSoonOnTheOther(_ write: InvalidatingWrite) async throws {
        let clock = RaceClock(Date())
        let ca = try AppStoreTestCA(now: clock.now)
        try await Self.withReplicas(clock: clock, configure: { RaceWorld.configure(&$0, ca: ca) }) { replicas, _ in
            let (a, b) = (replicas[0], replicas[1])
            let world = RaceWorld(identity: a.identity, clock: clock, ca: ca)
            var delays: [Double] = []
            for repetition in 0..<Self.raceRuns {
                let account = try await RaceAccount.make(world)
                try await write.prepare(world, account)
                let resource = account.resource
                for replica in [a, b] {
                    let shownBefore = write.shows(try await replica.gate.resolve(token: account.token, action: "view", resource: resource), account)
                    #expect(!shownBefore, "\(write.name), repetition \(repetition): shown before the write")
                }
                let racing = Task {
                    for _ in 0..<10 {
                        _ = try? await a.gate.resolve(token: account.token, action: "view", resource: resource)
                        _ = try? await b.gate.resolve(token: account.token, action: "view", resource: resource)
                        await Task.yield()
                    }
                }
                let token = try await write.change(world, account)
                let acknowledged = ContinuousClock.now
                // A Bool, so a failure does not print the account's tokens.
                let shownOnA = write.shows(try await a.gate.resolve(token: token, action: "view", resource: resource), account)
                #expect(shownOnA, "\(write.name), repetition \(repetition): replica A saw the old fact after its own write")
                let staleInMemoryOnA = Self.fromMemory(a, token, "view", resource).map { !write.shows($0, account) } ?? false
                #expect(!staleInMemoryOnA, "\(write.name), repetition \(repetition): replica A's memory road answered the old fact after its own write")
                try await Self.waitUntil("replica B shows the new fact of \(write.name)") {
                    write.shows(try await b.gate.resolve(token: token, action: "view", resource: resource), account)
                }
                delays.append(Self.milliseconds(ContinuousClock.now - acknowledged))
                let staleInMemoryOnB = Self.fromMemory(b, token, "view", resource).map { !write.shows($0, account) } ?? false
                #expect(!staleInMemoryOnB, "\(write.name), repetition \(repetition): replica B's memory road answered the old fact once B had the new")
                _ = await racing.value
                if !shownOnA { break }
            }
            let sorted = delays.sorted()
            let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
            print("\(write.name): write on A to the new fact on B over \(sorted.count) trials: p50 \(sorted[sorted.count / 2]) ms, p99 \(p99) ms")
        }
    }
}
