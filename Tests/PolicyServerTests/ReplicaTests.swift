import Crypto
import Foundation
import Testing
import GatehouseTestSupport

/// Two `policy serve` processes on one database: every rule that holds for one server must hold when
/// two race. Each test runs on one SQLite file shared by both processes and, with
/// `GATEHOUSE_TEST_POSTGRES_URL` and a server that takes a postgres URL, on a fresh PostgreSQL database.
@Suite(.serialized, .startsServers) struct ReplicaTests {
    static let pin = "739164"
    static let wrongPIN = "846213"

    /// Where the PostgreSQL variants stand: skipped with the reason when they cannot run (no URL, or a
    /// server without the PostgreSQL store), failed under `CI=true` without the URL, and when they run, a
    /// check that test databases can be made and dropped.
    @Test(.enabled(Comment(rawValue: TestPostgres.skipReason)) { await TestPostgres.isRunnable || TestPostgres.isMissingInCI })
    func thePostgreSQLVariantsRan() async throws {
        if TestPostgres.isMissingInCI { throw HarnessError("CI=true but \(TestPostgres.variable) is not set: .ci/run starts the cluster") }
        let dir = FileManager.default.temporaryDirectory
        let database = try await SharedDatabase.make(.postgres, in: dir)
        await database.drop()
        #expect(await SharedStore.runnable.contains(.postgres))
    }

    static func username() -> String { "r" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased() }

    @Test(arguments: await SharedStore.runnable)
    func aSessionFromOneReplicaIsValidOnTheOtherAndSignOutEndsItOnBoth(store: SharedStore) async throws {
        try await Replicas.with(store: store) { r in
            let (a, b) = (r.bases[0], r.bases[1])
            let session = try await r.anonymous(on: 0)
            let meOnB = try await Client.call("GET", b, "/v1/me", bearer: session.access)
            #expect(meOnB.status == 200, "\(meOnB.text)")
            #expect(meOnB.string("userId") == session.userId)

            // A space made through A is the user's own when B decides.
            let space = try await Client.call("POST", a, "/v1/spaces", body: #"{"name": "Casa"}"#, bearer: session.access)
            #expect(space.status == 201)
            let meOnA = try await Client.call("GET", a, "/v1/me", bearer: session.access)
            #expect(meOnA.status == 200)

            let out = try await Client.call("POST", b, "/v1/auth/signout", bearer: session.access)
            #expect(out.status == 204)
            for base in [a, b] {
                let me = try await Client.call("GET", base, "/v1/me", bearer: session.access)
                #expect(me.status == 401 && me.code == "unauthenticated", "\(base): \(me.status) \(me.text)")
                let decision = try await Client.call(
                    "POST", base, "/v1/decide", body: #"{"action": "view_dashboard", "resource": {"type": "space", "id": "x"}}"#,
                    bearer: session.access)
                #expect(decision.status == 200 && decision.string("reason") == "unauthenticated", "\(decision.text)")
            }
            // Refreshing the ended session is refused on both.
            let refresh = try await Client.call("POST", a, "/v1/auth/refresh", body: #"{"refreshToken": \#(Client.quoted(session.refresh))}"#)
            #expect(refresh.status == 401)
        }
    }

    /// Twenty wrong PINs at once, alternating between the replicas. The throttle counts an attempt before
    /// its PIN is checked, so exactly the attempts before the first delay (`PINPolicy.delays`: the 3rd
    /// failure starts a 30 s wait) are evaluated and answered `invalid_credentials`; every other one is
    /// refused `throttled` (field `pin`) without a check, the stored failure count is exactly that number,
    /// and so is the count of `wrong_pin` audit rows. The lockout itself (100 consecutive failures) lies
    /// days of delays away and is the same counter; this is where the race shows.
    ///
    /// `GATEHOUSE_RACE_RUNS` repeats it (default 3); a pair of replicas serves up to 9 runs (fresh
    /// usernames), then a fresh database and pair, so the per-client failure window (30 per 15 min)
    /// never answers first.
    @Test(arguments: await SharedStore.runnable)
    func concurrentWrongPINsAcrossReplicasAreCountedExactly(store: SharedStore) async throws {
        let runs = runsFromEnvironment("GATEHOUSE_RACE_RUNS", default: 3)
        let evaluatedBeforeDelay = 3
        let perPair = 9
        var done = 0
        var outcomes: [String: Int] = [:]
        while done < runs {
            let batch = min(perPair, runs - done)
            try await Replicas.with(store: store) { r in
                for _ in 0..<batch {
                    let seen = try await Self.raceWrongPINs(r, evaluatedBeforeDelay: evaluatedBeforeDelay)
                    outcomes[seen, default: 0] += 1
                }
            }
            done += batch
        }
        let expected = "\(evaluatedBeforeDelay) invalid_credentials, \(20 - evaluatedBeforeDelay) throttled, stored \(evaluatedBeforeDelay)"
        #expect(outcomes == [expected: runs], "over \(runs) runs on \(store): \(outcomes)")
        print("PIN race on \(store): \(runs) runs: \(outcomes)")
    }

    /// The control: two replicas that do *not* share a database (one SQLite file each) let twice as many
    /// wrong PINs be evaluated. The race test above would see this if replicas stopped sharing the count.
    @Test func replicasOnSeparateDatabasesWouldLetTwiceAsManyGuessesThrough() async throws {
        try await Replicas.with(store: .sqlite, databasePerReplica: true) { r in
            let name = Self.username()
            _ = try await r.register(name, pin: Self.pin, on: 0)
            let counts = try await Self.wrongPINs(name, to: r.bases)
            #expect(counts == ["invalid_credentials": 6, "throttled": 14], "\(counts)")
        }
    }

    /// Twenty wrong PINs for `name` at once, alternating over `bases`: how the answers were counted.
    static func wrongPINs(_ name: String, to bases: [URL]) async throws -> [String: Int] {
        let body = #"{"username": "\#(name)", "pin": "\#(wrongPIN)"}"#
        let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
            for i in 0..<20 {
                group.addTask { try await Client.call("POST", bases[i % bases.count], "/v1/auth/pin/signin", body: body) }
            }
            var all: [Answer] = []
            for try await answer in group { all.append(answer) }
            return all
        }
        var counts: [String: Int] = [:]
        for answer in answers {
            let key: String
            switch (answer.status, answer.code, answer.string("field")) {
            case (401, "invalid_credentials", _): key = "invalid_credentials"
            case (429, "throttled", "pin") where answer.header("Retry-After") != nil: key = "throttled"
            default: key = "other \(answer.status) \(answer.text)"
            }
            counts[key, default: 0] += 1
        }
        return counts
    }

    /// One race; returns what was seen, e.g. "3 invalid_credentials, 17 throttled, stored 3".
    static func raceWrongPINs(_ r: Replicas, evaluatedBeforeDelay: Int) async throws -> String {
        let name = username()
        let owner = try await r.register(name, pin: pin, on: 0)
        let bases = r.bases
        var counts = try await wrongPINs(name, to: bases)
        // The right PIN now waits too, on either replica: the delay is shared state.
        for base in bases {
            let right = try await Client.call("POST", base, "/v1/auth/pin/signin", body: #"{"username": "\#(name)", "pin": "\#(pin)"}"#)
            if right.status != 429 { counts["right PIN not throttled: \(right.status)", default: 0] += 1 }
        }
        let export = try await r.export(owner.access, on: 1)
        let stored = (export["pin"] as? [String: Any])?["failedAttempts"] as? Int ?? -1
        let events = export["securityEvents"] as? [[String: Any]] ?? []
        let wrongRows = events.filter { $0["reason"] as? String == "wrong_pin" }.count
        if wrongRows != stored { counts["wrong_pin audit rows \(wrongRows)", default: 0] += 1 }
        let parts = counts.sorted { $0.key < $1.key }.map { key, n in
            key.hasPrefix("invalid") || key.hasPrefix("throttled") ? "\(n) \(key)" : "\(key) x\(n)"
        }
        return parts.joined(separator: ", ") + ", stored \(stored)"
    }

    /// Within the 10 s grace window a refresh token presented again (a retry) gets the very same pair, on
    /// either replica; once its successor was used, presenting it again on the other replica revokes the
    /// whole family there and here.
    @Test(arguments: await SharedStore.runnable)
    func aRefreshTokenReusedOnTheOtherReplicaRevokesTheWholeFamily(store: SharedStore) async throws {
        try await Replicas.with(store: store) { r in
            let (a, b) = (r.bases[0], r.bases[1])
            func refresh(_ token: String, on base: URL) async throws -> Answer {
                try await Client.call("POST", base, "/v1/auth/refresh", body: #"{"refreshToken": \#(Client.quoted(token))}"#)
            }
            let first = try await r.anonymous(on: 0)
            let rotated = try await refresh(first.refresh, on: a)
            #expect(rotated.status == 200, "\(rotated.text)")
            let second = try #require(rotated.string("refreshToken"))

            // A retry through B inside the grace window: the same pair, not a second one.
            let retry = try await refresh(first.refresh, on: b)
            #expect(retry.status == 200 && retry.string("refreshToken") == second, "\(retry.text)")

            // The successor is used through B...
            let third = try await refresh(second, on: b)
            #expect(third.status == 200, "\(third.text)")
            let thirdAccess = try #require(third.string("accessToken"))
            let thirdRefresh = try #require(third.string("refreshToken"))
            #expect(try await Client.call("GET", a, "/v1/me", bearer: thirdAccess).status == 200)

            // ...so the first token, presented again through A, is a reuse: the family ends everywhere.
            let reuse = try await refresh(first.refresh, on: a)
            #expect(reuse.status == 401, "\(reuse.text)")
            for base in [a, b] {
                let me = try await Client.call("GET", base, "/v1/me", bearer: thirdAccess)
                #expect(me.status == 401, "the latest access token still works on \(base)")
            }
            let next = try await refresh(thirdRefresh, on: b)
            #expect(next.status == 401, "the latest refresh token still works: \(next.text)")

            // One token refreshed on both at once: one successor, whichever replica answers.
            let other = try await r.anonymous(on: 1)
            async let onA = refresh(other.refresh, on: a)
            async let onB = refresh(other.refresh, on: b)
            let both = try await [onA, onB]
            #expect(both.allSatisfy { $0.status == 200 }, "\(both.map { "\($0.status) \($0.text)" })")
            #expect(Set(both.compactMap { $0.string("refreshToken") }).count == 1, "two successors for one token")
        }
    }

    /// A device-key challenge is single-use across replicas: the same signed challenge sent to both at
    /// once verifies once; replayed later on the other replica it is refused.
    @Test(arguments: await SharedStore.runnable)
    func aDeviceChallengeCannotBeSpentTwiceAcrossReplicas(store: SharedStore) async throws {
        try await Replicas.with(store: store) { r in
            let (a, b) = (r.bases[0], r.bases[1])
            var access = try await r.register(Self.username(), pin: Self.pin, on: 0).access
            let key = P256.Signing.PrivateKey()
            let enroll = try await Client.call(
                "POST", a, "/v1/auth/device/enroll",
                body: #"{"deviceId": "phone", "publicKey": "\#(key.publicKey.x963Representation.base64EncodedString())"}"#, bearer: access)
            #expect(enroll.status == 204, "\(enroll.text)")

            func challenge(on base: URL) async throws -> (challenge: String, signature: String) {
                let answer = try await Client.call("POST", base, "/v1/auth/device/challenge", body: #"{"deviceId": "phone"}"#, bearer: access)
                guard answer.status == 201, let text = answer.string("challenge"), let bytes = Data(base64Encoded: text) else {
                    throw HarnessError("challenge: \(answer.status) \(answer.text)")
                }
                return (text, try key.signature(for: bytes).derRepresentation.base64EncodedString())
            }
            func verify(_ c: (challenge: String, signature: String), on base: URL, bearer: String) async throws -> Answer {
                try await Client.call(
                    "POST", base, "/v1/auth/device/verify",
                    body: #"{"deviceId": "phone", "challenge": "\#(c.challenge)", "signature": "\#(c.signature)"}"#, bearer: bearer)
            }

            // Issued by B, spent on A and B at the same moment.
            let raced = try await challenge(on: b)
            let token = access
            async let onA = verify(raced, on: a, bearer: token)
            async let onB = verify(raced, on: b, bearer: token)
            let both = try await [onA, onB]
            let wins = both.filter { $0.status == 200 }
            #expect(wins.count == 1, "\(both.map { "\($0.status) \($0.text)" })")
            #expect(both.filter { $0.status == 401 }.count == 1)
            if let win = wins.first, win.object["rotated"] as? Bool == true, let new = win.string("accessToken") { access = new }

            // Issued and spent on A, replayed on B.
            let once = try await challenge(on: a)
            let first = try await verify(once, on: a, bearer: access)
            #expect(first.status == 200, "\(first.text)")
            if first.object["rotated"] as? Bool == true, let new = first.string("accessToken") { access = new }
            let replay = try await verify(once, on: b, bearer: access)
            #expect(replay.status == 401 && replay.code == "invalid_credentials" && replay.string("field") == "challenge", "\(replay.text)")
        }
    }

    /// Writes flow to replica A (space creation, each one acknowledged with 201) while B answers decisions;
    /// A is killed with SIGKILL mid-stream. Every acknowledged space is then there through B (the owner's
    /// decision allows it, and the export lists it), and B answered every request before and after.
    @Test(arguments: await SharedStore.runnable)
    func killingOneReplicaUnderLoadLosesNoAcknowledgedWrite(store: SharedStore) async throws {
        try await Replicas.with(store: store) { r in
            let (a, b) = (r.bases[0], r.bases[1])
            let owner = try await r.register(Self.username(), pin: Self.pin, on: 1)
            let acknowledged = Acknowledged()
            let killAfter = 25
            let writers = 4
            let perWriter = 60

            let (bAnswers, bFailures) = try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
                for w in 0..<writers {
                    group.addTask {
                        for i in 0..<perWriter {
                            // A transport error is a write that was not acknowledged: the replica is gone.
                            guard let answer = try? await Client.call("POST", a, "/v1/spaces", body: #"{"name": "w\#(w)-\#(i)"}"#, bearer: owner.access)
                            else { break }
                            if answer.status == 201, let id = answer.string("resourceId") { acknowledged.add(id) }
                        }
                        return (0, [])
                    }
                }
                // B serves decisions by token throughout, and for a while after the kill.
                group.addTask {
                    var served = 0
                    var failures: [String] = []
                    let body = #"{"action": "create_space", "resource": {"type": "onboarding"}}"#
                    // Bounded: at most 6,000 requests, paced at 10 ms until the kill (so at least 60 s of waiting for it).
                    for _ in 0..<6_000 {
                        let killed = acknowledged.killed
                        let answer = try await Client.call("POST", b, "/v1/decide", body: body, bearer: owner.access)
                        if answer.status == 200 { served += 1 } else { failures.append("\(answer.status) \(answer.text)") }
                        if killed {
                            if acknowledged.servedAfterKill(increment: answer.status == 200) >= 50 { break }
                        } else {
                            try await Task.sleep(for: .milliseconds(10))
                        }
                    }
                    return (served, failures)
                }
                // The kill: once enough writes were acknowledged (or after a bounded wait).
                for _ in 0..<2_400 where acknowledged.count < killAfter { try await Task.sleep(for: .milliseconds(25)) }
                await r.crash(0)
                acknowledged.markKilled()
                var served = 0
                var failures: [String] = []
                for try await (n, f) in group {
                    served += n
                    failures += f
                }
                return (served, failures)
            }

            let ids = acknowledged.ids
            #expect(ids.count >= killAfter, "only \(ids.count) writes were acknowledged before the kill")
            #expect(bFailures.isEmpty, "B failed while A was killed: \(bFailures.prefix(3))")
            #expect(acknowledged.afterKill >= 50, "B answered \(acknowledged.afterKill) decisions after the kill")

            // Every acknowledged write, through B.
            let export = try await r.export(owner.access, on: 1)
            let listed = Set((export["memberships"] as? [[String: Any]] ?? []).compactMap { $0["resourceId"] as? String })
            let missing = ids.subtracting(listed)
            #expect(missing.isEmpty, "\(missing.count) of \(ids.count) acknowledged spaces are gone")
            for id in ids.prefix(20) {
                let decision = try await Client.call(
                    "POST", b, "/v1/decide", body: #"{"action": "view_dashboard", "resource": {"type": "space", "id": "\#(id)"}}"#,
                    bearer: owner.access)
                #expect(decision.string("decision") == "allow", "\(id): \(decision.text)")
            }
            print("SIGKILL on \(store): \(ids.count) acknowledged writes, all visible through B; B answered \(bAnswers) decisions")
        }
    }
}

/// What the writers saw acknowledged, and how B fared after the kill; shared by the load tasks.
final class Acknowledged: @unchecked Sendable {
    private let lock = NSLock()
    private var set: Set<String> = []
    private var isKilled = false
    private var after = 0

    func add(_ id: String) { lock.withLock { _ = set.insert(id) } }
    var ids: Set<String> { lock.withLock { set } }
    var count: Int { lock.withLock { set.count } }
    func markKilled() { lock.withLock { isKilled = true } }
    var killed: Bool { lock.withLock { isKilled } }
    var afterKill: Int { lock.withLock { after } }
    /// Counts one answer of B after the kill; returns how many so far.
    func servedAfterKill(increment: Bool) -> Int {
        lock.withLock {
            if increment { after += 1 }
            return after
        }
    }
}
