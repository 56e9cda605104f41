import AppStoreTestSupport
import Foundation
import Gatehouse
import GatehouseRaceSupport
import Synchronization
import Testing

/// The facade's cache of live sessions and stored resources (issue 26): a bearer's decision reads nothing from the
/// store once its facts are cached, and every write that changes a cached fact drops it before it is acknowledged.
@Suite struct DecisionCacheTests {
    static let app = Resource(type: "app")

    static func facade(capacity: Int = GatehouseService.defaultCacheCapacity) throws -> (Facade, GatehouseService, RecordingObserver) {
        let f = try Facade(policySet: "research-crawler")
        let observer = RecordingObserver()
        let gate = GatehouseService(policy: f.gate.policy, identity: f.identity, observer: observer, cacheCapacity: capacity)
        return (f, gate, observer)
    }

    /// An identity service on `f`'s SQLite file through a database of its own: what another process sharing the file
    /// writes through.
    static func anotherProcess(_ f: Facade) throws -> IdentityService {
        IdentityService(
            store: SQLiteStore(try AppDatabase(path: f.dir.appendingPathComponent("identity.sqlite").path)), configuration: f.identity.configuration,
            jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { f.clock.now })
    }

    /// Once cached, a bearer's decision needs no store at all: it still answers with the database closed.
    @Test func aCachedBearerDecisionReadsNothingFromTheStore() async throws {
        let (f, gate, observer) = try Self.facade()
        let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        let first = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
        #expect(observer.count(.miss) == 1 && observer.count(.hit) == 0)
        try f.database.pool.close()
        let second = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
        #expect(observer.count(.hit) == 1)
        #expect(second.request.subject == first.request.subject && !second.tokenRejected)
    }

    /// The bound holds: past `capacity` sessions an entry is evicted (and counted), never more are kept.
    @Test func theCacheIsBounded() async throws {
        let (f, gate, observer) = try Self.facade(capacity: 2)
        var users: [SessionTokens] = []
        for _ in 0..<5 { users.append(try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))) }
        // No write between the decisions: on SQLite any commit drops every entry, which would leave nothing to evict.
        for user in users { _ = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app) }
        #expect(observer.count(.eviction) == 3)
    }

    /// A session ends by the clock without a write: a cached token is refused once its access token expires.
    @Test func aCachedSessionExpiresByTheClock() async throws {
        let (f, gate, _) = try Self.facade()
        let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        #expect(try await !gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
        f.clock.advance(f.identity.configuration.accessTokenLifetime + 1)
        #expect(try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
    }

    /// A facade on SQLite whose identity service accepts the race support's App Store signer, operator and Apple keys, as a
    /// `RaceWorld`.
    static func world() throws -> (RaceWorld, GatehouseService) {
        let clock = RaceClock()
        let ca = try AppStoreTestCA(now: clock.now)
        let f = try Facade(policySet: "research-crawler") { RaceWorld.configure(&$0, ca: ca) }
        // The facade's identity service reads its own clock; the race world's writes move that one.
        let identity = IdentityService(
            store: SQLiteStore(f.database), configuration: f.identity.configuration, jwksFetcher: RaceApple.shared.jwksFetcher, now: { clock.now })
        return (RaceWorld(identity: identity, clock: clock, ca: ca), GatehouseService(policy: f.gate.policy, identity: identity))
    }

    /// For every invalidating write, 100 times: with decisions for the same token running meanwhile (filling the cache
    /// from reads the write may race), a decision that starts after the write returned sees the new fact.
    @Test(.serialized, arguments: InvalidatingWrite.all) func aDecisionAfterAWriteNeverSeesTheOldFact(_ write: InvalidatingWrite) async throws {
        let (w, gate) = try Self.world()
        for repetition in 0..<100 {
            let account = try await RaceAccount.make(w)
            try await write.prepare(w, account)
            let resource = account.resource
            let shownBefore = write.shows(try await gate.resolve(token: account.token, action: "view", resource: resource), account)
            #expect(!shownBefore, "\(write.name), repetition \(repetition): shown before the write")
            // Decisions for the same token while the write runs: some read the store before its commit and finish after
            // (their result must not be kept), some hit the cache.
            let racing = Task {
                for _ in 0..<20 {
                    _ = try? await gate.resolve(token: account.token, action: "view", resource: resource)
                    await Task.yield()
                }
            }
            let token = try await write.change(w, account)
            // A Bool, so a failure does not print the account's tokens.
            let shown = write.shows(try await gate.resolve(token: token, action: "view", resource: resource), account)
            _ = await racing.value
            #expect(shown, "\(write.name), repetition \(repetition): the old fact was seen after the write")
            if !shown { break }
        }
    }

    /// A batch resolves its bearer once, whatever its length: one session lookup for fifty decisions.
    @Test func aBatchResolvesItsBearerOnce() async throws {
        let (f, gate, observer) = try Self.facade()
        let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        let items = Array(repeating: Result<Request, RequestError>.success(Request(action: "ai_suggestions", resource: Self.app)), count: 50)
        let answers = try await gate.decideBatch(items, bearer: user.accessToken, by: gate.policy)
        #expect(answers.count == 50 && answers.allSatisfy { (try? $0.get()) != nil })
        #expect(observer.count(.miss) + observer.count(.hit) == 1)
        #expect(observer.decisions.withLock { $0 }.count == 50)
    }

    /// Several servers may share one SQLite file: a write through another connection to the file (another process's)
    /// is seen by the next decision, though no one told this process (`PRAGMA data_version`), 100 times.
    @Test func aWriteByAnotherProcessOnTheSameFileIsSeen() async throws {
        let (f, gate, _) = try Self.facade()
        let other = try Self.anotherProcess(f)
        for repetition in 0..<100 {
            let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            #expect(try await !gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            try await other.signOut(accessToken: user.accessToken)
            let after = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
            #expect(after.tokenRejected, "repetition \(repetition): a token signed out by another process was accepted")
        }
    }

    /// This process's own writes drop exactly the facts they change: another user's sign-in and a batch of decision
    /// records leave a cached session cached (they used to drop every cached fact, since the commit probe could not
    /// tell this process's commits from another's). Interleaved with them, another process's write is still seen.
    @Test func thisProcesssOwnWritesKeepTheFactsTheyDidNotChange() async throws {
        let (f, gate, observer) = try Self.facade()
        let other = try Self.anotherProcess(f)
        for repetition in 0..<50 {
            let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            #expect(try await !gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            let hits = observer.count(.hit)
            _ = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            let draft = DecisionRecordDraft(
                request: Request(subject: Subject(id: "someone", tier: "free"), action: "view", resource: Self.app), effect: "allow",
                reason: "allowed", policyHash: "h", policyLocation: nil, fromSession: false)
            try await f.identity.writeDecisionRecords([draft, draft])
            #expect(try await !gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
            #expect(observer.count(.hit) == hits + 1, "repetition \(repetition): an unrelated write of this process dropped the cached session")

            _ = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            try await other.signOut(accessToken: user.accessToken)
            _ = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            let after = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
            #expect(after.tokenRejected, "repetition \(repetition): a token signed out by another process between this one's writes was accepted")
        }
    }

    /// The user's own counters (what app-wide limits consume) are cached with the session and dropped by a change.
    @Test func userUsageIsInvalidatedByItsWrite() async throws {
        let (f, gate, _) = try Self.facade()
        for _ in 0..<100 {
            let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
            let before = try await gate.resolve(token: user.accessToken, action: "add_source", resource: Self.app)
            let count = before.request.resource.usage["sources"] ?? 0
            _ = try await f.identity.incrementUserUsage(userId: user.userId, counter: "sources")
            let after = try await gate.resolve(token: user.accessToken, action: "add_source", resource: Self.app)
            #expect(after.request.resource.usage["sources"] == count + 1)
        }
    }
}
