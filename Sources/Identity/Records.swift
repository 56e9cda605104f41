import Foundation

/// An account. `pseudonym` is what the audit log records instead of the id.
package struct UserRow: StoredRow, Hashable {
    package static let table = "user"
    package static let primaryKey = ["id"]
    package var id: String
    package var pseudonym: String
    package var username: String?
    package var displayName: String?
    package var email: String?
    package var isPrivateRelayEmail: Bool
    package var createdAt: Date
}

package struct AppRoleRow: StoredRow, Hashable {
    package static let table = "appRole"
    package static let primaryKey = ["userId", "role"]
    package var userId: String
    package var role: String
}

/// A Sign in with Apple identity linked to an account.
package struct AppleIdentityRow: StoredRow, Hashable {
    package static let table = "appleIdentity"
    package static let primaryKey = ["subject"]
    package var subject: String
    package var userId: String
    package var email: String?
    package var isPrivateRelay: Bool
    package var credentialState: String
    package var transferredTo: String?
    package var createdAt: Date
    package var updatedAt: Date
    /// When `credentialState` last changed: a token or notification issued before it cannot undo it.
    package var stateChangedAt: Date?
}

package struct AppleNonceRow: StoredRow, Hashable {
    package static let table = "appleNonce"
    package static let primaryKey = ["nonceHash"]
    package var nonceHash: Data
    package var expiresAt: Date
    package var usedAt: Date?
}

/// A PIN as KDF output with its parameters, and its failure counters.
package struct PINCredentialRow: StoredRow, Hashable {
    package static let table = "pinCredential"
    package static let primaryKey = ["userId"]
    package var userId: String
    package var algorithm: String
    package var rounds: Int
    package var salt: Data
    package var hash: Data
    package var failedAttempts: Int
    package var nextAttemptAt: Date?
    package var lockedAt: Date?
    package var updatedAt: Date
}

package struct PrivacySettingsRow: StoredRow, Hashable {
    package static let table = "privacySettings"
    package static let primaryKey = ["userId"]
    package var userId: String
    package var analytics: Bool
    package var crashReporting: Bool
    package var aiSuggestions: Bool
    package var dataSharing: String
    package var updatedAt: Date
}

package struct SubscriptionRow: StoredRow, Hashable {
    package static let table = "subscription"
    package static let primaryKey = ["userId"]
    package var userId: String
    package var tier: String
    package var productId: String
    package var expiresAt: Date?
    package var updatedAt: Date
    /// The App Store original transaction that granted the tier; nil for one an operator recorded.
    package var originalTransactionId: String? = nil
}

/// An App Store original transaction and the account that owns it (one account per original
/// transaction), with the facts of the last transaction applied: replays are idempotent, an older
/// one changes nothing, and notifications find the account.
package struct AppStoreTransactionRow: StoredRow, Hashable {
    package static let table = "appStoreTransaction"
    package static let primaryKey = ["originalTransactionId"]
    package var originalTransactionId: String
    package var userId: String
    package var transactionId: String
    package var productId: String
    package var environment: String
    package var expiresAt: Date?
    package var revokedAt: Date?
    /// The `signedDate` of the last applied transaction.
    package var signedAt: Date
    package var updatedAt: Date
}

/// What the server knows of an original transaction whatever account holds it, or whether any does: the revocation
/// ledger (issue 36, N2). Keyed by a digest of the original transaction id, never the id itself, and holding no user:
/// written from every verified `REFUND`/`REVOKE` notification (known or not) and every verified transaction carrying a
/// `revocationDate`, and, when an account is deleted, a tombstone of each original transaction it held (the dates
/// only). A transaction of the original signed at or before `revokedAt`, or (when no account holds it) at or before
/// `signedAt`, changes nothing.
package struct AppStoreLedgerRow: StoredRow, Hashable {
    package static let table = "appStoreLedger"
    package static let primaryKey = ["originalKey"]
    /// `AppStoreLedgerRow.key(of:)` of the original transaction id.
    package var originalKey: String
    /// The latest revocation date a verified refund or revocation gave.
    package var revokedAt: Date?
    /// A deleted account's tombstone: the `signedDate` of the last transaction of the original it had applied.
    package var signedAt: Date?
    package var updatedAt: Date

    /// SHA-256 (hex) of the original transaction id under a label of its own.
    package static func key(of originalTransactionId: String) -> String {
        SecretCoding.sha256("gatehouse.app-store-ledger.v1:" + originalTransactionId).map { String(format: "%02x", $0) }.joined()
    }
}

/// An App Store Server Notification already processed (issue 36, N4): its `notificationUUID`, kept for Apple's retry
/// window (`IdentityService.notificationWindow`); a notification signed longer ago than that is refused as stale, so a
/// forgotten id cannot be replayed.
package struct AppStoreNotificationSeenRow: StoredRow, Hashable {
    package static let table = "appStoreNotificationSeen"
    package static let primaryKey = ["notificationId"]
    package var notificationId: String
    package var receivedAt: Date
}

/// The UUID an account's purchases carry as StoreKit's `appAccountToken` (`GET /v1/me` shows it).
package struct AppAccountTokenRow: StoredRow, Hashable {
    package static let table = "appAccountToken"
    package static let primaryKey = ["userId"]
    package var userId: String
    /// Lower-case UUID text.
    package var token: String
    package var createdAt: Date
}

/// A signed-in session; its refresh tokens form one family.
package struct SessionRow: StoredRow, Hashable {
    package static let table = "session"
    package static let primaryKey = ["id"]
    package var id: String
    package var userId: String
    package var accessTokenHash: Data
    package var accessExpiresAt: Date
    package var authMethod: String
    package var authLevel: Int
    package var verifiedAt: Date
    package var createdAt: Date
    package var lastSeenAt: Date
    package var expiresAt: Date
    package var revokedAt: Date?
    package var revokedReason: String?
    /// Keys the derivation of refresh successors; never leaves the server.
    package var refreshKey: Data?
    /// The hash of the access token the last refresh or step-up replaced: it may still sign the session
    /// out (a sign-out racing a refresh ends the session the refresh continued), and does nothing else.
    package var previousAccessTokenHash: Data?
    /// What the sign-in said about its device (`SessionDevice.stored`), for the operator console; nil before v20 or when
    /// it said nothing. Never read for a decision.
    package var device: String? = nil
}

package struct RefreshTokenRow: StoredRow, Hashable {
    package static let table = "refreshToken"
    package static let primaryKey = ["tokenHash"]
    package var tokenHash: Data
    package var sessionId: String
    package var createdAt: Date
    package var rotatedAt: Date?
    package var successorHash: Data?
}

package struct DeviceKeyRow: StoredRow, Hashable {
    package static let table = "deviceKey"
    package static let primaryKey = ["id"]
    package var id: String
    package var userId: String
    package var deviceId: String
    package var publicKey: Data
    package var failedAttempts: Int
    package var lockedAt: Date?
    package var createdAt: Date
}

package struct DeviceChallengeRow: StoredRow, Hashable {
    package static let table = "deviceChallenge"
    package static let primaryKey = ["challengeHash"]
    package var challengeHash: Data
    package var deviceKeyId: String
    package var sessionId: String
    package var expiresAt: Date
    package var usedAt: Date?
}

/// A shared space (or any resource with members).
package struct ResourceRow: StoredRow, Hashable {
    package static let table = "resource"
    package static let primaryKey = ["id"]
    package var id: String
    package var type: String
    package var name: String
    package var ownerId: String
    package var createdAt: Date
}

package struct MembershipRow: StoredRow, Hashable {
    package static let table = "membership"
    package static let primaryKey = ["resourceId", "userId"]
    package var resourceId: String
    package var userId: String
    package var role: String
    package var joinedAt: Date
    /// The resource's type and owner, copied by the store's triggers (v22) for the lists: whatever a write says here,
    /// the stored row holds the resource's.
    package var resourceType: String? = nil
    package var resourceOwnerId: String? = nil
}

package struct ShareCodeRow: StoredRow, Hashable {
    package static let table = "shareCode"
    package static let primaryKey = ["codeHash"]
    package var codeHash: Data
    package var resourceId: String
    package var role: String
    package var createdBy: String
    package var createdAt: Date
    package var expiresAt: Date
    package var usedAt: Date?
}

package struct GuessLimitRow: StoredRow, Hashable {
    package static let table = "guessLimit"
    package static let primaryKey = ["scope"]
    package var scope: String
    package var windowStart: Date
    package var failures: Int
}

/// Consecutive PIN failures under a username (or user id) that has no PIN: throttled exactly like a
/// real account's, so the answers do not reveal which usernames exist. `scope` is a digest.
package struct PINThrottleRow: StoredRow, Hashable {
    package static let table = "pinThrottle"
    package static let primaryKey = ["scope"]
    package var scope: String
    package var failures: Int
    package var lastFailureAt: Date
}

/// A usage counter of a user (consumed by app-wide limits), kept by the server.
package struct UserUsageCounterRow: StoredRow, Hashable {
    package static let table = "userUsageCounter"
    package static let primaryKey = ["userId", "name"]
    package var userId: String
    package var name: String
    package var value: Int
}

package struct UsageCounterRow: StoredRow, Hashable {
    package static let table = "usageCounter"
    package static let primaryKey = ["resourceId", "name"]
    package var resourceId: String
    package var name: String
    package var value: Int
}

/// One security event. Holds kinds and outcomes only: never a PIN, token, nonce, key or user id.
package struct AuditEventRow: StoredRow, Hashable {
    package static let table = "auditEvent"
    package static let primaryKey = ["id"]
    package var id: Int64?
    package var at: Date
    package var kind: String
    package var method: String?
    package var outcome: String
    package var reason: String?
    package var actor: String?
    /// The PIN attempt the row belongs to: random hex, the same on the attempt's `pending` row (written with its
    /// reservation) and on the rows that settled it; nil for other events, and once an erasure dropped the link.
    package var attempt: String? = nil
}

/// The age limit of the logs: rows older than `cutoff` may be deleted (a trigger checks it).
package struct LogRetentionRow: StoredRow, Hashable {
    package static let table = "logRetention"
    package static let primaryKey = ["id"]
    package var id: Int
    package var cutoff: Date
}

/// One decision of the engine, as the facade logs it. Names the policy set's content hash; since v18 it also holds the
/// request as decided (`facts`, the contract's JSON with every user id pseudonymised) and the subject's keyed pseudonym,
/// so a record can be decided again (`policy replay`).
package struct DecisionLogRow: StoredRow, Hashable {
    package static let table = "decisionLog"
    package static let primaryKey = ["id"]
    package var id: Int64?
    package var at: Date
    package var actor: String?
    package var action: String
    package var resourceType: String
    package var resourceId: String?
    package var effect: String
    package var reason: String
    package var policyHash: String
    package var policyLocation: String?
    /// The subject's keyed pseudonym (`DecisionPseudonyms`), nil for a signed-out subject and once erased.
    package var subject: String? = nil
    /// The request as decided, as the contract's JSON with user ids pseudonymised; nil for a row logged before v18 and
    /// once erased.
    package var facts: String? = nil
}

/// The key decision records pseudonymise user ids with: 32 random bytes the migration draws, one per deployment (every
/// replica of one database reads the same), never exported or logged.
package struct DecisionKeyRow: StoredRow, Hashable {
    package static let table = "decisionKey"
    package static let primaryKey = ["id"]
    package var id: Int
    package var key: Data
}
