import Foundation
import PolicyModel

/// The rows one decision reads from the store, from one snapshot: the session an access token's hash names (live or
/// not: the service judges that), its user's facts, and a resource's facts. PostgreSQL reads them in one statement.
package struct DecisionRows: Sendable, Hashable {
    /// The session whose access token hashes to the key given; nil without a key or for an unknown one.
    package var session: DecisionSession?
    /// The facts of the session's user; nil without a session.
    package var user: UserFacts?
    /// The resource's owner, members and usage; nil without a resource id or for an unknown one.
    package var resource: ResourceFacts?

    package init(session: DecisionSession? = nil, user: UserFacts? = nil, resource: ResourceFacts? = nil) {
        self.session = session
        self.user = user
        self.resource = resource
    }

    /// The rows read through `tx`, statement by statement (any store's transaction).
    static func read(_ tx: any IdentityTransaction, accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        var rows = DecisionRows()
        if let accessTokenHash, let s = try await tx.fetchSelected(DecisionSession.self, ["accessTokenHash": .blob(accessTokenHash)]) {
            rows.session = s
            rows.user = try await UserFacts.read(tx, userId: s.userId)
        }
        if let resourceId { rows.resource = try await ResourceFacts.read(tx, resourceId) }
        return rows
    }
}

/// The columns of a session a decision judges by: whose it is, how and when it was verified, and what says whether it
/// is live. Both stores name them in the `SELECT` (`ColumnSelection`), so a decision never reads the session's token
/// hashes or refresh key, nor a column added to `session` later.
package struct DecisionSession: ColumnSelection, SessionLifetime, Hashable {
    package static let table = SessionRow.table
    package static let columns = ["userId", "authMethod", "verifiedAt", "accessExpiresAt", "lastSeenAt", "expiresAt", "revokedAt"]
    package var userId: String
    package var authMethod: String
    package var verifiedAt: Date
    package var accessExpiresAt: Date
    package var lastSeenAt: Date
    package var expiresAt: Date
    package var revokedAt: Date?
}

/// The times that say whether a session is live (`IdentityService.isLive`): one rule for a stored session and for
/// the columns a decision reads.
package protocol SessionLifetime {
    var accessExpiresAt: Date { get }
    var lastSeenAt: Date { get }
    var expiresAt: Date { get }
    var revokedAt: Date? { get }
}

extension SessionRow: SessionLifetime {}

/// What a user's subject and app-wide limits read: the subscription's tier and expiry, the app roles, the privacy
/// settings and the user's own usage counters.
package struct UserFacts: Sendable, Hashable {
    package var tier: String?
    package var subscriptionExpiry: Date?
    /// The app roles, sorted.
    package var roles: [String]
    package var privacy: PrivacySettings
    package var usage: [String: Int]

    /// Roles in any order (they are kept sorted); privacy from its stored columns, or the defaults without a row.
    package init(tier: String?, subscriptionExpiry: Date?, roles: [String], privacy: PrivacySettings, usage: [String: Int]) {
        self.tier = tier
        self.subscriptionExpiry = subscriptionExpiry
        self.roles = roles.sorted()
        self.privacy = privacy
        self.usage = usage
    }

    static func read(_ tx: any IdentityTransaction, userId: String) async throws -> UserFacts {
        let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(userId))
        let roles = try await tx.fetchAll(AppRoleRow.self, "userId", .text(userId)).map(\.role)
        let privacy = try await tx.fetchOne(PrivacySettingsRow.self, "userId", .text(userId))
        var usage: [String: Int] = [:]
        for u in try await tx.fetchAll(UserUsageCounterRow.self, "userId", .text(userId)) { usage[u.name] = u.value }
        return UserFacts(tier: sub?.tier, subscriptionExpiry: sub?.expiresAt, roles: roles, privacy: PrivacySettings(privacy), usage: usage)
    }
}

extension PrivacySettings {
    /// The settings a stored row holds; the defaults without one.
    init(_ row: PrivacySettingsRow?) {
        guard let row else {
            self.init()
            return
        }
        self.init(stored: row.analytics, crashReporting: row.crashReporting, aiSuggestions: row.aiSuggestions, dataSharing: row.dataSharing)
    }

    /// The settings from their stored columns: an unknown `dataSharing` reads as `none`.
    package init(stored analytics: Bool, crashReporting: Bool, aiSuggestions: Bool, dataSharing: String) {
        self.init(analytics: analytics, crashReporting: crashReporting, aiSuggestions: aiSuggestions, dataSharing: DataSharing(rawValue: dataSharing) ?? .none)
    }
}

extension ResourceFacts {
    static func read(_ tx: any IdentityTransaction, _ resourceId: String) async throws -> ResourceFacts? {
        guard let r = try await tx.fetchOne(ResourceRow.self, "id", .text(resourceId)) else { return nil }
        var members: [String: String] = [:]
        for m in try await tx.fetchAll(MembershipRow.self, "resourceId", .text(resourceId)) { members[m.userId] = m.role }
        var usage: [String: Int] = [:]
        for u in try await tx.fetchAll(UsageCounterRow.self, "resourceId", .text(resourceId)) { usage[u.name] = u.value }
        return ResourceFacts(id: r.id, type: r.type, ownerId: r.ownerId, members: members, usage: usage)
    }
}
