import Foundation
import GatehouseTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Replicas on the database's worst day (issue 29): `/readyz` that tells the truth, 503 `storage_unavailable`
/// with `Retry-After` instead of a wait, service again without a restart, and the sign-in limit shared by
/// every replica through the store (issue 22).
@Suite(.serialized, .startsServers) struct ReplicaPressureTests {
    static let postgresOnly = Comment(rawValue: TestPostgres.skipReason)

    /// A table the decisions read is gone (renamed): `/readyz` answers 503 `not_ready`, and 200 once it is back.
    @Test(.enabled(postgresOnly) { await TestPostgres.isRunnable })
    func readyzFailsWhenATableRequestsReadIsGone() async throws {
        try await Replicas.with(1, store: .postgres) { r in
            let base = r.bases[0]
            #expect(try await Client.call("GET", base, "/readyz").status == 200)
            _ = try await offThePool(URL(fileURLWithPath: TestPostgres.psql), [r.database.location, "-v", "ON_ERROR_STOP=1", "-q", "-c", #"ALTER TABLE "session" RENAME TO "session_gone""#])
            let gone = try await Client.call("GET", base, "/readyz", timeout: 20)
            #expect(gone.status == 503 && gone.code == "not_ready", "\(gone.status) \(gone.text)")
            _ = try await offThePool(URL(fileURLWithPath: TestPostgres.psql), [r.database.location, "-v", "ON_ERROR_STOP=1", "-q", "-c", #"ALTER TABLE "session_gone" RENAME TO "session""#])
            #expect(try await Client.call("GET", base, "/readyz").status == 200)
        }
    }

    /// PostgreSQL stopped under two replicas: `/readyz` answers 503 `not_ready` and a request 503
    /// `storage_unavailable` with `Retry-After` (each bounded by the client's own timeout, never a hang to
    /// the database's return); when it is back both serve again, without a restart.
    @Test(.enabled(postgresOnly) { await TestPostgres.isRunnable })
    func aDatabaseOutageIsReportedAndBothReplicasRecoverWithoutARestart() async throws {
        let cluster = try await OwnCluster.start()
        do {
            try await outageAndReturn(cluster)
        } catch {
            Issue.record(error)
        }
        await cluster.stop()
    }

    func outageAndReturn(_ cluster: OwnCluster) async throws {
        // The shipped pool and connect deadlines: the outage must be answered within them.
        try await Replicas.with(2, store: .postgres, server: cluster.url, shippedDeadlines: true) { r in
            let session = try await r.anonymous(on: 0)
            try await cluster.run("stop-server")
            for base in r.bases {
                // The client's timeouts are generous (a starved replica on a loaded core answers late) and still bound
                // the wait: the database stays stopped through them, so a replica that waited for its return would fail.
                let ready = try await Client.call("GET", base, "/readyz", timeout: 90)
                #expect(ready.status == 503 && ready.code == "not_ready", "\(base) during the outage: \(ready.status) \(ready.text)")
                let me = try await Client.call("GET", base, "/v1/me", bearer: session.access, timeout: 90)
                #expect(me.status == 503 && me.code == "storage_unavailable", "\(base) during the outage: \(me.status) \(me.text)")
                #expect(me.header("Retry-After") != nil, "a 503 says when to retry")
            }
            try await cluster.run("start-server")
            for base in r.bases {
                var ready = false
                for _ in 0..<60 where !ready {
                    ready = (try? await Client.call("GET", base, "/readyz", timeout: 20).status) == 200
                    if !ready { try await Task.sleep(for: .milliseconds(500)) }
                }
                #expect(ready, "\(base) did not become ready again after PostgreSQL returned")
                let me = try await Client.call("GET", base, "/v1/me", bearer: session.access)
                #expect(me.status == 200, "\(base) after the outage: \(me.status) \(me.text)")
            }
        }
    }

    /// A request that waits on a held lock past the server's request deadline gets 503
    /// `storage_unavailable` with `Retry-After`, not an answer once the lock goes.
    @Test(.enabled(postgresOnly) { await TestPostgres.isRunnable })
    func aRequestPastItsDeadlineIsA503() async throws {
        let server = try await TestPostgres.required()
        // The store's own deadlines are set long here, so the server's request deadline is the one that ends the wait.
        try await Replicas.with(
            1, store: .postgres, arguments: ["--request-timeout", "1"], server: server,
            databaseOptions: "?lock_timeout=60000&statement_timeout=60000"
        ) { r in
            let session = try await r.anonymous(on: 0)
            let holder = try await LockHolder.take(url: r.database.location, table: "session")
            let me: Answer
            do { me = try await Client.call("GET", r.bases[0], "/v1/me", bearer: session.access, timeout: 30) } catch {
                await holder.stop()
                throw error
            }
            await holder.stop()
            #expect(me.status == 503 && me.code == "storage_unavailable", "\(me.status) \(me.text)")
            #expect(me.header("Retry-After") != nil)
        }
    }

    /// The sign-in limit (`--sign-in-limit 4/60`) holds for the client across both replicas: 4 sign-ins in
    /// the window in all, not 4 per replica.
    @Test(arguments: await SharedStore.runnable)
    func theSignInLimitIsSharedByTheReplicas(store: SharedStore) async throws {
        try await Replicas.with(2, store: store, arguments: ["--sign-in-limit", "4/60"]) { r in
            var statuses: [Int] = []
            for i in 0..<8 {
                statuses.append(try await Client.call("POST", r.bases[i % 2], "/v1/auth/anonymous").status)
            }
            #expect(statuses.filter { $0 == 201 }.count == 4, "\(statuses)")
            #expect(statuses.filter { $0 == 429 }.count == 4, "\(statuses)")
        }
    }
}

/// A PostgreSQL cluster of this test's own (`scripts/postgres-test-cluster.sh` with its own state file), so
/// stopping it touches no other test.
final class OwnCluster: Sendable {
    let state: String
    let url: String

    private init(state: String, url: String) {
        self.state = state
        self.url = url
    }

    static func start() async throws -> OwnCluster {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-own-\(UUID().uuidString).state").path
        let url = try await script(["start"], state: state).trimmingCharacters(in: .whitespacesAndNewlines)
        return OwnCluster(state: state, url: url)
    }

    func run(_ verb: String) async throws { _ = try await Self.script([verb], state: state) }
    func stop() async { _ = try? await Self.script(["stop"], state: state) }

    static func script(_ arguments: [String], state: String) async throws -> String {
        try await offThePool(
            URL(fileURLWithPath: "/bin/bash"), [TestServer.root.appendingPathComponent("scripts/postgres-test-cluster.sh").path] + arguments,
            environment: ["GATEHOUSE_PG_STATE": state])
    }
}

/// `program`'s standard output (`Program.output`, GatehouseTestSupport).
func offThePool(_ program: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> String {
    try await Program(program, arguments, environment: .inherited(adding: environment)).output()
}

/// A psql session holding an ACCESS EXCLUSIVE lock on a table until `stop()` (or 60 s at most).
final class LockHolder {
    let process: RunningProgram

    init(process: RunningProgram) { self.process = process }

    static func take(url: String, table: String) async throws -> LockHolder {
        let holder = LockHolder(
            process: try await Program(
                path: TestPostgres.psql, [url, "-q", "-c", "BEGIN; LOCK TABLE \"\(table)\" IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT;"]
            ).start())
        // Bounded: the lock is seen in pg_locks, or the holder is given up.
        for _ in 0..<100 {
            let held = try await offThePool(
                URL(fileURLWithPath: TestPostgres.psql),
                [url, "-tA", "-c", "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = '\"\(table)\"'::regclass"])
            if held.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { return holder }
            try await Task.sleep(for: .milliseconds(100))
        }
        await holder.stop()
        throw HarnessError("the lock on \(table) was not taken")
    }

    /// SIGTERM, and a bounded wait for psql to end (SIGKILL after it).
    func stop() async {
        await process.stop()
    }
}
