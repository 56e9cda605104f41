import Foundation
import PolicyModel

/// Everything held on a user, as the GDPR export writes it. Credential secrets (PIN hash and salt,
/// token hashes) are described, not copied: they are ours to protect, not data about the user.
struct UserExport: Codable {
    struct Account: Codable {
        var id: String
        var username: String?
        var displayName: String?
        var email: String?
        var isPrivateRelayEmail: Bool
        var createdAt: Date
    }
    struct AppleId: Codable {
        var appleUserId: String
        var email: String?
        var isPrivateRelay: Bool
        var credentialState: String
        var transferredTo: String?
        var linkedAt: Date
    }
    struct PIN: Codable {
        var algorithm: String
        var rounds: Int
        var failedAttempts: Int
        var locked: Bool
        var updatedAt: Date
    }
    struct Session: Codable {
        var id: String
        var authMethod: String
        var verifiedAt: Date
        var createdAt: Date
        var lastSeenAt: Date
        var expiresAt: Date
        var revokedAt: Date?
        var revokedReason: String?
    }
    struct Device: Codable {
        var deviceId: String
        var publicKey: Data
        var locked: Bool
        var enrolledAt: Date
    }
    struct Membership: Codable {
        var resourceId: String
        var resourceType: String
        var resourceName: String
        var role: String
        var joinedAt: Date
        var usage: [String: Int]?
    }
    struct Subscription: Codable {
        var tier: String
        var productId: String
        var expiresAt: Date?
    }
    /// An App Store original transaction the account owns, as last applied.
    struct AppStorePurchase: Codable {
        var originalTransactionId: String
        var transactionId: String
        var productId: String
        var environment: String
        var expiresAt: Date?
        var revokedAt: Date?
        var signedAt: Date
    }
    struct Event: Codable {
        var at: Date
        var kind: String
        var method: String?
        var outcome: String
        var reason: String?
        /// Links a PIN attempt's `pending` row to the rows that settled it (absent for other events).
        var attempt: String?
    }
    var exportedAt: Date
    var account: Account
    var appRoles: [String]
    var appleIds: [AppleId]
    var pin: PIN?
    var sessions: [Session]
    var devices: [Device]
    var memberships: [Membership]
    var subscription: Subscription?
    /// The App Store transactions the account owns.
    var appStorePurchases: [AppStorePurchase]
    /// The UUID the account's App Store purchases carry, if one was made.
    var appAccountToken: String?
    /// The user's own usage counters (app-wide limits).
    var usage: [String: Int]
    var privacy: PrivacySettings
    var securityEvents: [Event]
    var decisions: [Decision]
    struct Decision: Codable {
        var at: Date
        var action: String
        var resourceType: String
        var resourceId: String?
        var effect: String
        var reason: String
        var policyHash: String
        /// The request as decided, user ids pseudonymised (absent on rows logged before v18).
        var facts: Request?
    }
}

extension IdentityService {
    /// One JSON document of everything held on the signed-in user (GDPR access and portability);
    /// an account with a credential needs a verification by it within `reverificationWindow`.
    public func exportData(accessToken: String) async throws -> Data {
        let t = now()
        let export: UserExport = try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, action: "a data export")
            let u = try await self.user(tx, s.userId)
            try await self.audit(tx, .dataExport, outcome: .success, user: u, at: t)
            var memberships: [UserExport.Membership] = []
            for m in try await tx.fetchAll(MembershipRow.self, "userId", .text(u.id)) {
                guard let r = try await tx.fetchOne(ResourceRow.self, "id", .text(m.resourceId)) else { continue }
                var usage: [String: Int]?
                if r.ownerId == u.id {
                    usage = Dictionary(uniqueKeysWithValues: try await tx.fetchAll(UsageCounterRow.self, "resourceId", .text(r.id)).map { ($0.name, $0.value) })
                }
                memberships.append(.init(resourceId: r.id, resourceType: r.type, resourceName: r.name, role: m.role, joinedAt: m.joinedAt, usage: usage))
            }
            let pin = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(u.id)).map {
                UserExport.PIN(algorithm: $0.algorithm, rounds: $0.rounds, failedAttempts: $0.failedAttempts, locked: $0.lockedAt != nil, updatedAt: $0.updatedAt)
            }
            let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(u.id)).map { UserExport.Subscription(tier: $0.tier, productId: $0.productId, expiresAt: $0.expiresAt) }
            return UserExport(
                exportedAt: t,
                account: .init(id: u.id, username: u.username, displayName: u.displayName, email: u.email, isPrivateRelayEmail: u.isPrivateRelayEmail, createdAt: u.createdAt),
                appRoles: try await tx.fetchAll(AppRoleRow.self, "userId", .text(u.id)).map(\.role).sorted(),
                appleIds: try await tx.fetchAll(AppleIdentityRow.self, "userId", .text(u.id)).map {
                    .init(appleUserId: $0.subject, email: $0.email, isPrivateRelay: $0.isPrivateRelay, credentialState: $0.credentialState, transferredTo: $0.transferredTo, linkedAt: $0.createdAt)
                },
                pin: pin,
                sessions: try await tx.fetchAll(SessionRow.self, "userId", .text(u.id)).sorted { $0.createdAt < $1.createdAt }.map {
                    .init(id: $0.id, authMethod: $0.authMethod, verifiedAt: $0.verifiedAt, createdAt: $0.createdAt, lastSeenAt: $0.lastSeenAt, expiresAt: $0.expiresAt, revokedAt: $0.revokedAt, revokedReason: $0.revokedReason)
                },
                devices: try await tx.fetchAll(DeviceKeyRow.self, "userId", .text(u.id)).map {
                    .init(deviceId: $0.deviceId, publicKey: $0.publicKey, locked: $0.lockedAt != nil, enrolledAt: $0.createdAt)
                },
                memberships: memberships.sorted { $0.joinedAt < $1.joinedAt },
                subscription: sub,
                appStorePurchases: try await tx.fetchAll(AppStoreTransactionRow.self, "userId", .text(u.id)).sorted { $0.originalTransactionId < $1.originalTransactionId }.map {
                    .init(originalTransactionId: $0.originalTransactionId, transactionId: $0.transactionId, productId: $0.productId, environment: $0.environment, expiresAt: $0.expiresAt, revokedAt: $0.revokedAt, signedAt: $0.signedAt)
                },
                appAccountToken: try await tx.fetchOne(AppAccountTokenRow.self, "userId", .text(u.id))?.token,
                usage: Dictionary(uniqueKeysWithValues: try await tx.fetchAll(UserUsageCounterRow.self, "userId", .text(u.id)).map { ($0.name, $0.value) }),
                privacy: try await self.privacy(tx, u.id),
                securityEvents: try await tx.fetch(StoreRead<AuditEventRow>.byActor(u.pseudonym)).map {
                    .init(at: $0.at, kind: $0.kind, method: $0.method, outcome: $0.outcome, reason: $0.reason, attempt: $0.attempt)
                },
                decisions: try await tx.fetch(StoreRead<DecisionLogRow>.byActor(u.pseudonym)).map {
                    .init(at: $0.at, action: $0.action, resourceType: $0.resourceType, resourceId: $0.resourceId, effect: $0.effect, reason: $0.reason, policyHash: $0.policyHash,
                        facts: $0.facts.flatMap { try? Request(json: $0) })
                })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(export)
    }

    /// Deletes the signed-in user and everything held on them (GDPR erasure); an account with a
    /// credential needs a verification by it within `reverificationWindow`.
    public func deleteAccount(accessToken: String) async throws {
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, action: "deleting the account")
            try await self.deleteUser(tx, s.userId, at: t)
        }
        try await flushErasures()
    }

    /// Deletes a user by id (an operator action, e.g. a request received by mail).
    public func deleteUser(userId: String, operator credential: OperatorCredential) async throws {
        try authorizeOperator(credential)
        let t = now()
        try await store.write { tx in try await self.deleteUser(tx, userId, at: t) }
        try await flushErasures()
    }

    /// Cleans up after an erasure (`IdentityStore.flushErasures`); a skipped cleanup (a role that may not
    /// VACUUM, docs/identity.md) is counted in `erasure_cleanups_skipped` (the store logs which tables): the
    /// deletion itself stands, and the operator's metric says that old row versions wait for the owner's VACUUM.
    func flushErasures() async throws {
        if try await !store.flushErasuresReportingSkipped().isEmpty { counters.add(.erasureCleanupsSkipped) }
    }

    /// In one transaction: revoke sessions, hand owned spaces to the longest-standing strongest member
    /// (or delete them when no one else is in them), record a pseudonymous deletion, give each of the
    /// user's audit and decision rows its own random pseudonym (and drop the decisions' resource
    /// ids), delete the rest. The callers then checkpoint the WAL so no copy survives in it.
    func deleteUser(_ tx: any IdentityTransaction, _ userId: String, at t: Date) async throws {
        let user = try await self.user(tx, userId)
        try await revokeSessions(tx, of: userId, reason: "account_deleted", at: t)
        let rank = ["owner": 0, "editor": 1, "commenter": 2, "viewer": 3]
        var handedOver = 0, deleted = 0
        for var r in try await tx.fetchAll(ResourceRow.self, "ownerId", .text(userId)) {
            let others = try await tx.fetchAll(MembershipRow.self, "resourceId", .text(r.id)).filter { $0.userId != userId }
                .sorted { (rank[$0.role] ?? 9, $0.joinedAt, $0.userId) < (rank[$1.role] ?? 9, $1.joinedAt, $1.userId) }
            if var heir = others.first {
                r.ownerId = heir.userId
                try await tx.update(r)
                heir.role = "owner"
                try await tx.update(heir)
                handedOver += 1
            } else {
                try await tx.deleteAll(ResourceRow.self, ["id": .text(r.id)])
                deleted += 1
            }
        }
        try await audit(tx, .accountDeleted, outcome: .success, reason: "spaces_handed_over:\(handedOver),spaces_deleted:\(deleted)", user: user, at: t)
        // The App Store transactions go with the account; what the checks need of them stays, naming no one.
        try await keepPurchaseTombstones(tx, of: userId, at: t)
        // Cascades: identities, PIN, devices, challenges, sessions, refresh tokens, memberships,
        // share codes, subscription, App Store transactions and appAccountToken, privacy, roles. The
        // pseudonym goes with the row. The revocation ledger names no account and stays.
        try await tx.deleteAll(UserRow.self, ["id": .text(userId)])
        try await tx.deleteAll(GuessLimitRow.self, ["scope": .text("share-code:" + userId)])
        try await tx.deleteAll(GuessLimitRow.self, ["scope": .text("username-probe-user:" + userId)])
        try await tx.erase(actor: user.pseudonym)
    }

    /// Deletes audit and decision rows older than `maxAge` (an operator action, run periodically):
    /// the only deletion the logs allow. `maxAge` must be at least `minimumLogRetention`; the cutoff
    /// never moves back. Returns how many rows of each log went.
    @discardableResult
    public func expireLogs(olderThan maxAge: TimeInterval, operator credential: OperatorCredential) async throws -> (audit: Int, decisions: Int) {
        try authorizeOperator(credential)
        return try await expireLogs(olderThan: maxAge)
    }

    /// `expireLogs(olderThan:operator:)` without the credential: for the server's own maintenance task, which runs
    /// with the operator's configuration rather than a presented token. Not part of the public API.
    @discardableResult
    package func expireLogs(olderThan maxAge: TimeInterval) async throws -> (audit: Int, decisions: Int) {
        guard maxAge >= configuration.minimumLogRetention else {
            throw IdentityError.invalid("maxAge", "must be at least \(Int(configuration.minimumLogRetention / 86400)) days")
        }
        let t = now()
        let cutoff = t.addingTimeInterval(-maxAge)
        let counts = try await store.write { tx in
            let previous = try await tx.fetchOne(LogRetentionRow.self, "id", .int(1))?.cutoff
            let effective = max(previous ?? cutoff, cutoff)
            try await tx.upsert(LogRetentionRow(id: 1, cutoff: effective))
            let audit = try await tx.deleteAll(AuditEventRow.self, "at", before: effective)
            let decisions = try await tx.deleteAll(DecisionLogRow.self, "at", before: effective)
            try await self.audit(tx, .logsExpired, outcome: .success, reason: "audit:\(audit),decisions:\(decisions)", at: t)
            return (audit, decisions)
        }
        return counts
    }
}
