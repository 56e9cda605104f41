import Foundation
import PolicyModel
import Synchronization

/// What the decision cache did with one lookup, for an observer's metrics.
public enum DecisionCacheEvent: String, Sendable, CaseIterable {
    /// A fact was served from memory.
    case hit
    /// A fact was read from the store (and kept, unless a write raced the read).
    case miss
    /// A fact was dropped to stay within the bound.
    case eviction
    /// A fact was dropped because a write changed it.
    case invalidation
}

/// The live sessions (with their subjects and the user's own counters) and stored resources' facts a bearer's
/// decisions need, kept in memory so that a decision by access token reads nothing from the store.
///
/// - Keys: a session by its access token's hash (never the token); a resource by its id (an id the store does not
///   know is kept too, as unknown).
/// - Bounded: at most `capacity` sessions and `capacity` resources; past it an entry is dropped (`eviction`).
/// - Exact: every committed write that changes a fact (`IdentityService.factChanges`, told after `COMMIT` and before
///   the write returns) drops it, so a decision that starts after a write is acknowledged never sees the old fact.
///   A read that started before such a write keeps nothing: each invalidation moves an epoch, and a read's result is
///   kept only if the epoch has not moved since the read began.
/// - Time: a cached session is judged live by the clock at every hit (`IdentityService.isLive`), so it expires,
///   idles out and ends with its access token without a write.
/// - Other replicas: on PostgreSQL their writes arrive through the store's relay (`LISTEN`/`NOTIFY`); while the relay
///   is down an entry is trusted for `FactChanges.stalenessBound` (1 s) after its read only, and when it comes back
///   every entry is dropped. On a SQLite file several servers share, any commit by another connection (seen by
///   `PRAGMA data_version` before an entry is trusted) drops every entry.
final class DecisionCache: Sendable {
    private struct State {
        var epoch: UInt64 = 0
        var sessions: [Data: (facts: SessionFacts, at: ContinuousClock.Instant)] = [:]
        var sessionKeysByUser: [String: Set<Data>] = [:]
        /// A resource's facts (nil for an id the store does not know) and when they were read.
        var resources: [String: (facts: ResourceFacts?, at: ContinuousClock.Instant)] = [:]
    }

    let capacity: Int
    private let state = Mutex(State())
    private let observer: any DecisionObserver
    /// Whether other processes' writes are heard; while they are not, an entry is trusted for the staleness bound.
    private let changes: FactChanges

    init(capacity: Int, observer: any DecisionObserver, changes: FactChanges) {
        self.capacity = capacity
        self.observer = observer
        self.changes = changes
    }

    /// The oldest read an entry may come from to be trusted now: nil (any) while every write is heard, else
    /// `FactChanges.stalenessBound` ago.
    private var trustedSince: ContinuousClock.Instant? {
        changes.catchUp() ? nil : ContinuousClock.now - FactChanges.stalenessBound
    }

    /// What `read(session:resource:live:orRead:)` found: the session and the resource's facts, and whether each came
    /// from memory.
    struct Found {
        /// The live session; nil without a key or when the store holds none live.
        var session: SessionFacts?
        /// The resource's facts: nil without an id, `.some(nil)` for an id the store does not know.
        var resource: ResourceFacts??
        /// The session (when a key was given) came from memory.
        var sessionHit = false
        /// The resource (when an id was given) came from memory.
        var resourceHit = false
    }

    /// The read-through every decision's facts go by: the session of `key` (when given) from memory if held and still
    /// `live`, the facts of resource `id` (when given) from memory if held; whatever is missing is read by `read` in one
    /// call (given the key and the id it must read, nil for what it need not) and kept.
    ///
    /// The rule that makes invalidation exact is here, once: a read's result is kept only if no write moved the epoch
    /// since the read began (a write that raced it may have changed what it returned), and an entry's age, which the
    /// staleness bound judges, counts from before the read.
    func read(
        session key: Data?, live: (SessionFacts) -> Bool, resource id: String?,
        orRead read: (_ session: Data?, _ resource: String?) async throws -> (session: SessionFacts?, resource: ResourceFacts?)
    ) async throws -> Found {
        var found = Found()
        var sessionKey: Data?
        if let key {
            if let cached = session(key), live(cached) {
                found.session = cached
                found.sessionHit = true
            } else {
                sessionKey = key
            }
        }
        var resourceId: String?
        if let id {
            if let cached = resource(id) {
                found.resource = cached
                found.resourceHit = true
            } else {
                resourceId = id
            }
        }
        guard sessionKey != nil || resourceId != nil else { return found }
        let epoch = state.withLock { $0.epoch }
        let startedAt = ContinuousClock.now
        let fresh = try await read(sessionKey, resourceId)
        if let key = sessionKey {
            found.session = fresh.session
            if let session = fresh.session { keep(session, key: key, readIn: epoch, startedAt: startedAt) }
        }
        if let id = resourceId {
            found.resource = .some(fresh.resource)
            keep(fresh.resource, resource: id, readIn: epoch, startedAt: startedAt)
        }
        return found
    }

    /// The session of `key` and the facts of resource `id` (when given) if both are in memory, trusted, and the session
    /// is `usable`; nil otherwise. It never reads the store and never waits, so an event loop may call it: the one
    /// look it makes is `trustedSince`'s, as every cached decision's (on SQLite, `PRAGMA data_version` on a connection
    /// of its own, which touches only the WAL index in shared memory and has no busy timeout). It counts hits only when
    /// it answers, and nothing when it does not (the read that follows counts).
    func peek(session key: Data, usable: (SessionFacts) -> Bool, resource id: String?) -> Found? {
        let since = trustedSince
        let found = state.withLock { s -> Found? in
            guard let session = s.sessions[key], Self.trusted(session.at, since: since) else { return nil }
            var found = Found(session: session.facts, sessionHit: true)
            if let id {
                guard let resource = s.resources[id], Self.trusted(resource.at, since: since) else { return nil }
                found.resource = .some(resource.facts)
                found.resourceHit = true
            }
            return found
        }
        guard let found, let session = found.session, usable(session) else { return nil }
        observer.cache(.hit)
        if id != nil { observer.cache(.hit) }
        return found
    }

    /// Whether an entry read at `at` may be trusted, given `trustedSince` (nil: any).
    private static func trusted(_ at: ContinuousClock.Instant, since: ContinuousClock.Instant?) -> Bool {
        since.map { at >= $0 } ?? true
    }

    /// The cached session of `key`, counted as a hit or a miss.
    private func session(_ key: Data) -> SessionFacts? {
        let since = trustedSince
        let found = state.withLock { s -> SessionFacts? in
            guard let entry = s.sessions[key], Self.trusted(entry.at, since: since) else { return nil }
            return entry.facts
        }
        observer.cache(found == nil ? .miss : .hit)
        return found
    }

    /// The cached facts of resource `id`: nil for a miss, `.some(nil)` for an id known not to be stored.
    private func resource(_ id: String) -> ResourceFacts?? {
        let since = trustedSince
        let found = state.withLock { s -> ResourceFacts?? in
            guard let entry = s.resources[id], Self.trusted(entry.at, since: since) else { return nil }
            return .some(entry.facts)
        }
        observer.cache(found == nil ? .miss : .hit)
        return found
    }

    /// Keeps a session read in `epoch`, unless a write has changed a fact since.
    private func keep(_ facts: SessionFacts, key: Data, readIn epoch: UInt64, startedAt read: ContinuousClock.Instant) {
        keep(readIn: epoch) { s in
            var evicted = 0
            while s.sessions.count >= capacity, let victim = s.sessions.first {
                s.sessions.removeValue(forKey: victim.key)
                let user = victim.value.facts.userId
                s.sessionKeysByUser[user]?.remove(victim.key)
                if s.sessionKeysByUser[user]?.isEmpty == true { s.sessionKeysByUser.removeValue(forKey: user) }
                evicted += 1
            }
            s.sessions[key] = (facts, read)
            s.sessionKeysByUser[facts.userId, default: []].insert(key)
            return evicted
        }
    }

    /// Keeps a resource's facts (nil: not stored) read in `epoch`, unless a write has changed a fact since.
    private func keep(_ facts: ResourceFacts?, resource id: String, readIn epoch: UInt64, startedAt read: ContinuousClock.Instant) {
        keep(readIn: epoch) { s in
            let evicted = max(0, s.resources.count - capacity + 1)
            for victim in Array(s.resources.keys.prefix(evicted)) { s.resources.removeValue(forKey: victim) }
            s.resources[id] = (facts, read)
            return evicted
        }
    }

    /// Runs `insert` (which returns how many entries it evicted) if the cache is on and no write has moved the epoch
    /// since the read began; counts the evictions.
    private func keep(readIn epoch: UInt64, _ insert: (inout State) -> Int) {
        guard capacity > 0 else { return }
        let evicted = state.withLock { s in s.epoch == epoch ? insert(&s) : 0 }
        for _ in 0..<evicted { observer.cache(.eviction) }
    }

    /// Drops every fact `changes` names and moves the epoch (so reads in flight are not kept).
    func invalidate(_ changes: Set<FactChange>) {
        let dropped = state.withLock { s -> Int in
            s.epoch &+= 1
            var dropped = 0
            for change in changes {
                switch change {
                case .user(let user):
                    for key in s.sessionKeysByUser.removeValue(forKey: user) ?? [] where s.sessions.removeValue(forKey: key) != nil { dropped += 1 }
                case .resource(let id):
                    if s.resources.removeValue(forKey: id) != nil { dropped += 1 }
                case .everything:
                    dropped += s.sessions.count + s.resources.count
                    s.sessions = [:]
                    s.sessionKeysByUser = [:]
                    s.resources = [:]
                }
            }
            return dropped
        }
        for _ in 0..<dropped { observer.cache(.invalidation) }
    }

    /// How many sessions and resources are cached now.
    var count: (sessions: Int, resources: Int) { state.withLock { ($0.sessions.count, $0.resources.count) } }
}
