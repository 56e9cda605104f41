import Foundation
import PolicyModel

/// The facts about a resource that a decision needs.
public struct ResourceFacts: Sendable, Hashable {
    /// The resource's id.
    public var id: String
    /// The resource type, as a policy set's `resources` names it (`space`, `project`).
    public var type: String
    /// The user id of the resource's owner.
    public var ownerId: String
    /// User id to role, the owner included as `owner`.
    public var members: [String: String]
    /// Usage counter name to its count, as `incrementUsage` left it.
    public var usage: [String: Int]

    package init(id: String, type: String, ownerId: String, members: [String: String], usage: [String: Int]) {
        self.id = id
        self.type = type
        self.ownerId = ownerId
        self.members = members
        self.usage = usage
    }
}

extension IdentityService {
    /// The `Subject` of a valid session: id, stored tier and expiry (the engine applies expiry),
    /// app roles, how and when it was verified, and privacy settings as attributes. Read as a decision reads it
    /// (`readDecisionFacts`), and marked seen as `validate(accessToken:)` marks it; an unknown, expired or revoked token
    /// is `unauthenticated`.
    public func subject(accessToken: String) async throws -> Subject {
        guard let key = cacheKey(accessToken: accessToken) else { throw IdentityError.signedOut }
        let t = now()
        guard let session = try await readDecisionFacts(accessTokenKey: key, resourceId: nil, at: t).session,
            try await markSeenIfDue(session, accessTokenKey: key, at: t)
        else { throw IdentityError.signedOut }
        return session.subject
    }

    /// The owner, members and usage counters of a resource.
    public func resourceFacts(resourceId: String) async throws -> ResourceFacts {
        try Self.validateResourceId(resourceId, field: "resourceId")
        return try await store.read { tx in
            guard let facts = try await ResourceFacts.read(tx, resourceId) else { throw IdentityError(.notFound, field: "resourceId", "no such resource") }
            return facts
        }
    }

    /// The subject of session `s` with its user's facts `user`.
    func subject(of s: DecisionSession, _ user: UserFacts) -> Subject {
        Subject(
            id: s.userId, tier: user.tier, subscriptionExpiry: user.subscriptionExpiry, roles: user.roles,
            auth: Authentication(method: s.authMethod, verifiedAt: s.verifiedAt), attributes: user.privacy.attributes)
    }
}

/// A live session and its user's decision facts, as a cache of decision facts keeps them under the access token's
/// hash: the subject, the user's own usage counters, and what says how long the session stays live.
public struct SessionFacts: Sendable, Hashable, SessionLifetime {
    /// The session's user.
    public let userId: String
    /// The subject the engine judges: tier and expiry, app roles, how and when verified, privacy settings.
    public let subject: Subject
    /// The user's own usage counters (what app-wide limits consume).
    public let userUsage: [String: Int]
    package let expiresAt: Date
    package let accessExpiresAt: Date
    package let lastSeenAt: Date
    /// Never set: a session is read and kept only while live, and its revocation drops it (`SessionLifetime`).
    package var revokedAt: Date? { nil }
}

extension IdentityService {
    /// The key a cache keeps an access token's facts under: the token's hash, never the token. Nil for a string that
    /// cannot be an access token (such a token is refused).
    public func cacheKey(accessToken: String) -> Data? { TokenKind.access.hash(of: accessToken) }

    /// The live session whose access token hashes to `key` (with its user's facts) and the stored facts of
    /// `resourceId`, each only when asked, read from one snapshot at `t` (`IdentityStore.decisionRows`: one statement on
    /// PostgreSQL). The session is nil when
    /// there is none or it is not live (unknown, expired, idle, revoked); the resource nil for an id the store does
    /// not know. A malformed resource id is `invalid_input` on `resource.id`.
    public func readDecisionFacts(accessTokenKey key: Data?, resourceId: String?, at t: Date) async throws
        -> (session: SessionFacts?, resource: ResourceFacts?)
    {
        if let resourceId { try Self.validateResourceId(resourceId, field: "resource.id") }
        let rows = try await store.decisionRows(accessTokenHash: key, resourceId: resourceId)
        var session: SessionFacts?
        if let s = rows.session, isLive(s, at: t), let user = rows.user {
            session = SessionFacts(
                userId: s.userId, subject: subject(of: s, user), userUsage: user.usage, expiresAt: s.expiresAt, accessExpiresAt: s.accessExpiresAt,
                lastSeenAt: s.lastSeenAt)
        }
        return (session, rows.resource)
    }

    /// Whether a session read earlier is still live at `t` by the clock alone (its lifetime, its access token's, the
    /// idle timeout), as the store would judge it: what makes a cached session expire without a write.
    public func isLive(_ facts: SessionFacts, at t: Date) -> Bool {
        t < facts.expiresAt && t < facts.accessExpiresAt && t.timeIntervalSince(facts.lastSeenAt) <= configuration.idleTimeout
    }

    /// Whether a session read earlier can be used at `t` without a write: live by the clock (`isLive`) and marked seen
    /// within `lastSeenGranularity` (so `markSeenIfDue` would write nothing). What a decision made without an await
    /// (`GatehouseService.decideFromMemory`) requires of a cached session.
    public func isUsableWithoutWrite(_ facts: SessionFacts, at t: Date) -> Bool {
        isLive(facts, at: t) && !needsSeen(facts, at: t)
    }

    /// Marks the session seen when its last mark is older than `lastSeenGranularity` (a write at most once a minute
    /// per session, as `validate` does). False when the session is no longer live.
    public func markSeenIfDue(_ facts: SessionFacts, accessTokenKey key: Data, at t: Date) async throws -> Bool {
        guard needsSeen(facts, at: t) else { return true }
        do {
            _ = try await markSeen(accessTokenHash: key, at: t)
            return true
        } catch let error as IdentityError where error.code == .unauthenticated {
            return false
        }
    }
}
