import Foundation
import GatehouseRaceSupport
import Testing

@testable import Gatehouse

/// A bearer's decision made from the decision cache alone, without an await (`decideFromMemory`, the server's decide
/// road ahead of its router): it answers only what `resolve` would answer, never a fact a write has replaced, never for
/// a session that needs a last-seen write or has ended by the clock, and it counts the cache's lookups only when it
/// answers (so the road's misses are not counted twice).
@Suite struct DecideFromMemoryTests {
    static let app = Resource(type: "app")

    /// What the memory road resolves `action` on `resource` to for `token` now, or nil.
    static func fromMemory(_ gate: GatehouseService, _ token: String, _ action: String, _ resource: Resource) -> ResolvedRequest? {
        gate.subjects.resolvedFromMemory(Request(action: action, resource: resource), token: token, at: gate.identity.clock(), by: gate.policy)
    }

    /// For every write that changes a cached fact, 20 times: once `resolve` has cached the account's facts, the memory
    /// road answers exactly what `resolve` does; after the write returns (decisions racing it meanwhile), it answers
    /// nothing or the new fact.
    @Test(.serialized, arguments: InvalidatingWrite.all) func afterAWriteTheMemoryRoadNeverAnswersTheOldFact(_ write: InvalidatingWrite) async throws {
        let (w, gate) = try DecisionCacheTests.world()
        for repetition in 0..<20 {
            let account = try await RaceAccount.make(w)
            try await write.prepare(w, account)
            let resource = account.resource
            let stored = try await gate.resolve(token: account.token, action: "view", resource: resource)
            let cached = try #require(Self.fromMemory(gate, account.token, "view", resource), "\(write.name): nothing answered from memory once cached")
            #expect(cached.request == stored.request && cached.tokenRejected == stored.tokenRejected, "\(write.name), repetition \(repetition): the memory road resolved otherwise")
            let racing = Task {
                for _ in 0..<20 {
                    _ = try? await gate.resolve(token: account.token, action: "view", resource: resource)
                    _ = Self.fromMemory(gate, account.token, "view", resource)
                    await Task.yield()
                }
            }
            let token = try await write.change(w, account)
            let after = Self.fromMemory(gate, token, "view", resource)
            _ = await racing.value
            // A Bool, so a failure does not print the account's tokens.
            let stale = after.map { !write.shows($0, account) } ?? false
            #expect(!stale, "\(write.name), repetition \(repetition): the memory road answered the old fact after the write")
            if stale { break }
        }
    }

    /// Nothing from memory for a session the store has not been asked about, for a resource whose facts are not
    /// cached yet, for a session due for its last-seen write (the router's road writes it, and then memory answers
    /// again), or for one the clock has ended; and a lookup that answers nothing counts nothing.
    @Test func onlyACachedSessionNeedingNoWriteIsAnsweredFromMemory() async throws {
        let (f, gate, observer) = try DecisionCacheTests.facade()
        let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        let project = Resource(type: "project", id: "p-nobody-made")
        #expect(Self.fromMemory(gate, user.accessToken, "ai_suggestions", Self.app) == nil)
        #expect(observer.count(.hit) == 0 && observer.count(.miss) == 0, "a lookup that answered nothing was counted")

        _ = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
        let hits = observer.count(.hit)
        #expect(Self.fromMemory(gate, user.accessToken, "ai_suggestions", Self.app)?.tokenRejected == false)
        #expect(observer.count(.hit) == hits + 1)
        #expect(Self.fromMemory(gate, user.accessToken, "view", project) == nil, "the project's facts are not cached yet")
        _ = try await gate.resolve(token: user.accessToken, action: "view", resource: project)
        let both = observer.count(.hit)
        #expect(Self.fromMemory(gate, user.accessToken, "view", project) != nil)
        #expect(observer.count(.hit) == both + 2, "the session and the resource, each a hit")

        f.clock.advance(f.identity.configuration.lastSeenGranularity + 1)
        #expect(Self.fromMemory(gate, user.accessToken, "ai_suggestions", Self.app) == nil, "a last-seen write is due")
        #expect(try await !gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app).tokenRejected)
        _ = try await gate.resolve(token: user.accessToken, action: "ai_suggestions", resource: Self.app)
        #expect(Self.fromMemory(gate, user.accessToken, "ai_suggestions", Self.app) != nil, "marked seen: memory answers again")

        f.clock.advance(f.identity.configuration.accessTokenLifetime + 1)
        #expect(Self.fromMemory(gate, user.accessToken, "ai_suggestions", Self.app) == nil, "the access token expired by the clock")
    }

    /// The decision from memory is `decide`'s, observed and recorded the same; a named subject beside a bearer is
    /// refused as `decide` refuses it, before anything is decided.
    @Test func theDecisionIsTheRoutersDecision() async throws {
        let (f, gate, observer) = try DecisionCacheTests.facade()
        let user = try await f.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        let request = Request(action: "ai_suggestions", resource: Self.app)
        let viaStore = try await gate.decide(request, bearer: user.accessToken, by: gate.policy)
        let decided = observer.decisions.withLock { $0 }.count
        let viaMemory = try #require(try gate.decideFromMemory(request, bearer: user.accessToken, by: gate.policy))
        #expect(viaMemory == viaStore)
        #expect(observer.decisions.withLock { $0 }.count == decided + 1)
        var named = request
        named.subject = Subject(id: "someone-else", tier: "pro")
        #expect(throws: DecisionRequestError.self) { try gate.decideFromMemory(named, bearer: user.accessToken, by: gate.policy) }
        await #expect(throws: DecisionRequestError.self) { try await gate.decide(named, bearer: user.accessToken, by: gate.policy) }
        #expect(observer.decisions.withLock { $0 }.count == decided + 1)
    }
}
