import Foundation
import PolicyModel

/// What `decisionFacts(accessToken:resourceId:)` read for one decision, from one snapshot of the store.
public struct DecisionFacts: Sendable, Hashable {
    /// A token was presented (it may still have been refused: then `subject` is nil).
    public var tokenGiven: Bool
    /// The live session's subject; nil without a token or for a refused one.
    public var subject: Subject?
    /// The stored resource's facts; nil without a resource id or for an id the store does not know.
    public var resource: ResourceFacts?
    /// The signed-in user's own counters, read only when `resource` is nil (app-wide limits).
    public var userUsage: [String: Int] = [:]

    /// A token was given and refused: decisions for it are `unauthenticated`.
    public var tokenRefused: Bool { tokenGiven && subject == nil }
}

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
    /// app roles, how and when it was verified, and privacy settings as attributes.
    public func subject(accessToken: String) async throws -> Subject {
        let s = try await validate(accessToken: accessToken)
        return try await store.read { tx in try await self.subject(tx, userId: s.userId, method: s.authMethod, verifiedAt: s.verifiedAt) }
    }

    func subject(_ tx: any IdentityTransaction, userId: String, method: String, verifiedAt: Date) async throws -> Subject {
        let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(userId))
        let roles = try await tx.fetchAll(AppRoleRow.self, "userId", .text(userId)).map(\.role).sorted()
        return Subject(
            id: userId, tier: sub?.tier, subscriptionExpiry: sub?.expiresAt, roles: roles,
            auth: Authentication(method: method, verifiedAt: verifiedAt), attributes: try await privacy(tx, userId).attributes)
    }

    /// The owner, members and usage counters of a resource.
    public func resourceFacts(resourceId: String) async throws -> ResourceFacts {
        try Self.validateResourceId(resourceId, field: "resourceId")
        return try await store.read { tx in
            guard let facts = try await self.resourceFacts(tx, resourceId) else { throw IdentityError(.notFound, field: "resourceId", "no such resource") }
            return facts
        }
    }

    func resourceFacts(_ tx: any IdentityTransaction, _ resourceId: String) async throws -> ResourceFacts? {
        try await ResourceFacts.read(tx, resourceId)
    }

    /// The subject of session `s` with its user's facts `user`.
    func subject(of s: DecisionSession, _ user: UserFacts) -> Subject {
        Subject(
            id: s.userId, tier: user.tier, subscriptionExpiry: user.subscriptionExpiry, roles: user.roles,
            auth: Authentication(method: s.authMethod, verifiedAt: s.verifiedAt), attributes: user.privacy.attributes)
    }

    /// Everything a decision for the holder of `accessToken` needs from the store, read from one snapshot (one
    /// statement on PostgreSQL): the session's subject, the resource's owner, members and usage, and, for a resource the store does
    /// not know, the user's own counters. A token that is unknown, expired, idle or revoked gives no subject (never an
    /// error); no token gives none either. A session not seen for `lastSeenGranularity` is marked seen afterwards,
    /// in a write of its own, as `validate(accessToken:)` does.
    ///
    /// `sharedTypes`, when given, are the only resource types whose stored facts count: a stored resource of any other
    /// type (an app-wide type such as `app`) is treated as unknown, so its counters never stand in for the user's own.
    public func decisionFacts(accessToken: String?, resourceId: String?, sharedTypes: Set<String>? = nil) async throws -> DecisionFacts {
        if let resourceId { try Self.validateResourceId(resourceId, field: "resource.id") }
        let t = now()
        let hash = accessToken.flatMap { TokenKind.access.hash(of: $0) }
        let rows = try await store.decisionRows(accessTokenHash: hash, resourceId: resourceId)
        var facts = DecisionFacts(tokenGiven: accessToken != nil)
        var seen = false
        if let s = rows.session, isLive(s, at: t), let user = rows.user {
            facts.subject = subject(of: s, user)
            seen = needsSeen(s, at: t)
        }
        if let stored = rows.resource, sharedTypes?.contains(stored.type) ?? true { facts.resource = stored }
        if facts.resource == nil, facts.subject != nil, let user = rows.user { facts.userUsage = user.usage }
        guard seen, let hash else { return facts }
        do {
            _ = try await markSeen(accessTokenHash: hash, at: t)
            return facts
        } catch let error as IdentityError where error.code == .unauthenticated {
            // Revoked or expired between the read and the write: a refused token, as validate would say.
            return DecisionFacts(tokenGiven: true, resource: facts.resource)
        }
    }
}

/// A live session and its user's decision facts, as a cache of decision facts keeps them under the access token's
/// hash: the subject, the user's own usage counters, and what says how long the session stays live.
public struct SessionFacts: Sendable, Hashable {
    /// The session's user.
    public let userId: String
    /// The subject the engine judges: tier and expiry, app roles, how and when verified, privacy settings.
    public let subject: Subject
    /// The user's own usage counters (what app-wide limits consume).
    public let userUsage: [String: Int]
    let expiresAt: Date
    let accessExpiresAt: Date
    let lastSeenAt: Date
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

    /// Marks the session seen when its last mark is older than `lastSeenGranularity` (a write at most once a minute
    /// per session, as `validate` does). False when the session is no longer live.
    public func markSeenIfDue(_ facts: SessionFacts, accessTokenKey key: Data, at t: Date) async throws -> Bool {
        guard t.timeIntervalSince(facts.lastSeenAt) >= configuration.lastSeenGranularity else { return true }
        do {
            _ = try await markSeen(accessTokenHash: key, at: t)
            return true
        } catch let error as IdentityError where error.code == .unauthenticated {
            return false
        }
    }
}
