import Foundation
import Gatehouse
import Synchronization
import Testing

/// A store that counts the transactions opened on the store it wraps.
final class CountingStore: IdentityStore {
    let base: any IdentityStore
    init(base: any IdentityStore) { self.base = base }
    let counts = Mutex<(reads: Int, writes: Int)>((0, 0))
    var reads: Int { counts.withLock { $0.reads } }
    var writes: Int { counts.withLock { $0.writes } }

    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        counts.withLock { $0.reads += 1 }
        return try await base.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        counts.withLock { $0.writes += 1 }
        return try await base.write(body)
    }

    func flushErasures() async throws { try await base.flushErasures() }
}

/// A decision for a bearer reads what the decision cache does not hold (the session with the subject, the resource's
/// facts) in one read transaction (one snapshot), and nothing once both are cached; the session's `lastSeenAt` write
/// comes only once per `lastSeenGranularity`, and drops the cached session (it is a write to it).
@Suite struct DecisionReadTests {
    @Test func aBearerDecisionReadsAtMostOneTransaction() async throws {
        let f = try Facade(policySet: "contacasal")
        let store = CountingStore(base: SQLiteStore(f.database))
        let clock = f.clock
        let identity = IdentityService(store: store, configuration: f.identity.configuration, jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { clock.now })
        let gate = GatehouseService(policy: f.gate.policy, identity: identity)
        let owner = try await identity.signInAnonymously(source: .inProcess)
        let pinned = try await identity.setPIN(accessToken: owner.accessToken, pin: "4172").accessToken
        let space = try await identity.createSpace(accessToken: pinned, name: "Casa", type: "space", inviteRole: "partner")
        let room = Resource(type: "space", id: space.resourceId)

        func cost(_ decide: () async throws -> Decision) async throws -> (decision: Decision, reads: Int, writes: Int) {
            let (reads, writes) = (store.reads, store.writes)
            let decision = try await decide()
            return (decision, store.reads - reads, store.writes - writes)
        }
        // Nothing cached: the session, the subject and the stored resource in one read, no write (just seen).
        let stored = try await cost { try await gate.decide(token: pinned, action: "view_dashboard", resource: room) }
        #expect(stored.decision.isAllowed)
        #expect((stored.reads, stored.writes) == (1, 0))
        // Both cached now: no read at all.
        let again = try await cost { try await gate.decide(token: pinned, action: "view_dashboard", resource: room) }
        #expect(again.decision.isAllowed && (again.reads, again.writes) == (0, 0))
        // A resource the store does not know and of no shared type: the user's own counters came with the session.
        let appWide = try await cost { try await gate.decide(token: pinned, action: "create_space", resource: Resource(type: "onboarding", id: "nowhere")) }
        #expect((appWide.reads, appWide.writes) == (0, 0))
        // A token that cannot be one of ours and no token: refused and signed out without a read (the room is cached).
        let refused = try await cost { try await gate.decide(token: "garbage", action: "view_dashboard", resource: room) }
        #expect(refused.decision.reason == .unauthenticated && (refused.reads, refused.writes) == (0, 0))
        let none = try await cost { try await gate.decide(token: nil, action: "view_dashboard", resource: room) }
        #expect(none.decision.reason == .unauthenticated && (none.reads, none.writes) == (0, 0))
        // Past the last-seen granularity the session is marked seen: one write, which drops the cached session, so the
        // decision after it reads the session again (the room stays cached).
        clock.advance(identity.configuration.lastSeenGranularity + 1)
        let stale = try await cost { try await gate.decide(token: pinned, action: "view_dashboard", resource: room) }
        #expect(stale.decision.isAllowed && (stale.reads, stale.writes) == (0, 1))
        let fresh = try await cost { try await gate.decide(token: pinned, action: "view_dashboard", resource: room) }
        #expect((fresh.reads, fresh.writes) == (1, 0))
        // Signed out in between: refused, as before.
        try await identity.signOut(accessToken: pinned)
        #expect(try await gate.decide(token: pinned, action: "view_dashboard", resource: room).reason == .unauthenticated)
    }
}
