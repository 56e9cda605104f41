import Foundation

/// An account. `pseudonym` is what the audit log records instead of the id.
public struct UserRow: StoredRow, Hashable {
    public static let table = "user"
    public static let primaryKey = ["id"]
    public var id: String
    public var pseudonym: String
    public var username: String?
    public var displayName: String?
    public var email: String?
    public var isPrivateRelayEmail: Bool
    public var createdAt: Date
}

public struct AppRoleRow: StoredRow, Hashable {
    public static let table = "appRole"
    public static let primaryKey = ["userId", "role"]
    public var userId: String
    public var role: String
}

/// A Sign in with Apple identity linked to an account.
public struct AppleIdentityRow: StoredRow, Hashable {
    public static let table = "appleIdentity"
    public static let primaryKey = ["subject"]
    public var subject: String
    public var userId: String
    public var email: String?
    public var isPrivateRelay: Bool
    public var credentialState: String
    public var transferredTo: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// When `credentialState` last changed: a token or notification issued before it cannot undo it.
    public var stateChangedAt: Date?
}

public struct AppleNonceRow: StoredRow, Hashable {
    public static let table = "appleNonce"
    public static let primaryKey = ["nonceHash"]
    public var nonceHash: Data
    public var expiresAt: Date
    public var usedAt: Date?
}

/// A PIN as KDF output with its parameters, and its failure counters.
public struct PINCredentialRow: StoredRow, Hashable {
    public static let table = "pinCredential"
    public static let primaryKey = ["userId"]
    public var userId: String
    public var algorithm: String
    public var rounds: Int
    public var salt: Data
    public var hash: Data
    public var failedAttempts: Int
    public var nextAttemptAt: Date?
    public var lockedAt: Date?
    public var updatedAt: Date
}

public struct PrivacySettingsRow: StoredRow, Hashable {
    public static let table = "privacySettings"
    public static let primaryKey = ["userId"]
    public var userId: String
    public var analytics: Bool
    public var crashReporting: Bool
    public var aiSuggestions: Bool
    public var dataSharing: String
    public var updatedAt: Date
}

public struct SubscriptionRow: StoredRow, Hashable {
    public static let table = "subscription"
    public static let primaryKey = ["userId"]
    public var userId: String
    public var tier: String
    public var productId: String
    public var expiresAt: Date?
    public var updatedAt: Date
}

/// A signed-in session; its refresh tokens form one family.
public struct SessionRow: StoredRow, Hashable {
    public static let table = "session"
    public static let primaryKey = ["id"]
    public var id: String
    public var userId: String
    public var accessTokenHash: Data
    public var accessExpiresAt: Date
    public var authMethod: String
    public var authLevel: Int
    public var verifiedAt: Date
    public var createdAt: Date
    public var lastSeenAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
    public var revokedReason: String?
    /// Keys the derivation of refresh successors; never leaves the server.
    public var refreshKey: Data?
}

public struct RefreshTokenRow: StoredRow, Hashable {
    public static let table = "refreshToken"
    public static let primaryKey = ["tokenHash"]
    public var tokenHash: Data
    public var sessionId: String
    public var createdAt: Date
    public var rotatedAt: Date?
    public var successorHash: Data?
}

public struct DeviceKeyRow: StoredRow, Hashable {
    public static let table = "deviceKey"
    public static let primaryKey = ["id"]
    public var id: String
    public var userId: String
    public var deviceId: String
    public var publicKey: Data
    public var failedAttempts: Int
    public var lockedAt: Date?
    public var createdAt: Date
}

public struct DeviceChallengeRow: StoredRow, Hashable {
    public static let table = "deviceChallenge"
    public static let primaryKey = ["challengeHash"]
    public var challengeHash: Data
    public var deviceKeyId: String
    public var sessionId: String
    public var expiresAt: Date
    public var usedAt: Date?
}

/// A shared space (or any resource with members).
public struct ResourceRow: StoredRow, Hashable {
    public static let table = "resource"
    public static let primaryKey = ["id"]
    public var id: String
    public var type: String
    public var name: String
    public var ownerId: String
    public var createdAt: Date
}

public struct MembershipRow: StoredRow, Hashable {
    public static let table = "membership"
    public static let primaryKey = ["resourceId", "userId"]
    public var resourceId: String
    public var userId: String
    public var role: String
    public var joinedAt: Date
}

public struct ShareCodeRow: StoredRow, Hashable {
    public static let table = "shareCode"
    public static let primaryKey = ["codeHash"]
    public var codeHash: Data
    public var resourceId: String
    public var role: String
    public var createdBy: String
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
}

public struct GuessLimitRow: StoredRow, Hashable {
    public static let table = "guessLimit"
    public static let primaryKey = ["scope"]
    public var scope: String
    public var windowStart: Date
    public var failures: Int
}

/// Consecutive PIN failures under a username (or user id) that has no PIN: throttled exactly like a
/// real account's, so the answers do not reveal which usernames exist. `scope` is a digest.
public struct PINThrottleRow: StoredRow, Hashable {
    public static let table = "pinThrottle"
    public static let primaryKey = ["scope"]
    public var scope: String
    public var failures: Int
    public var lastFailureAt: Date
}

/// A usage counter of a user (consumed by app-wide limits), kept by the server.
public struct UserUsageCounterRow: StoredRow, Hashable {
    public static let table = "userUsageCounter"
    public static let primaryKey = ["userId", "name"]
    public var userId: String
    public var name: String
    public var value: Int
}

public struct UsageCounterRow: StoredRow, Hashable {
    public static let table = "usageCounter"
    public static let primaryKey = ["resourceId", "name"]
    public var resourceId: String
    public var name: String
    public var value: Int
}

/// One security event. Holds kinds and outcomes only: never a PIN, token, nonce, key or user id.
public struct AuditEventRow: StoredRow, Hashable {
    public static let table = "auditEvent"
    public static let primaryKey = ["id"]
    public var id: Int64?
    public var at: Date
    public var kind: String
    public var method: String?
    public var outcome: String
    public var reason: String?
    public var actor: String?

    public init(at: Date, kind: String, method: String? = nil, outcome: String, reason: String? = nil, actor: String? = nil) {
        self.at = at
        self.kind = kind
        self.method = method
        self.outcome = outcome
        self.reason = reason
        self.actor = actor
    }
}

/// The age limit of the logs: rows older than `cutoff` may be deleted (a trigger checks it).
public struct LogRetentionRow: StoredRow, Hashable {
    public static let table = "logRetention"
    public static let primaryKey = ["id"]
    public var id: Int
    public var cutoff: Date
}

/// One decision of the engine, as the facade logs it. Names the policy set's content hash.
public struct DecisionLogRow: StoredRow, Hashable {
    public static let table = "decisionLog"
    public static let primaryKey = ["id"]
    public var id: Int64?
    public var at: Date
    public var actor: String?
    public var action: String
    public var resourceType: String
    public var resourceId: String?
    public var effect: String
    public var reason: String
    public var policyHash: String
    public var policyLocation: String?
}
