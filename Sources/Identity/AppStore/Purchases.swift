import Foundation

/// What a verified purchase did to the account.
public enum PurchaseOutcome: String, Sendable, Hashable {
    /// The transaction set the tier and its expiry.
    case applied
    /// The same transaction was applied before: nothing changed.
    case replayed
    /// A later transaction of the same original transaction was applied before: nothing changed.
    case stale
    /// The transaction is revoked or refunded: it sets nothing.
    case revoked
}

/// The answer to a purchase: what happened and the account's subscription afterwards.
public struct PurchaseResult: Sendable, Hashable {
    /// What the transaction did.
    public var outcome: PurchaseOutcome
    /// The stored tier after the purchase (nil: none).
    public var tier: String?
    /// When the stored tier ends (nil: no end, or no tier).
    public var expiresAt: Date?
}

/// What an App Store Server Notification did.
public enum AppStoreNotificationOutcome: String, Sendable, Hashable {
    /// The account's subscription follows the notification's transaction (renewed, expired, grace period).
    case applied
    /// A refund or revocation ended the tier that transaction granted.
    case ended
    /// A type this server does not act on: nothing changed.
    case ignoredType = "ignored_type"
    /// No account owns the original transaction: nothing changed.
    case unknownTransaction = "unknown_transaction"
    /// A later transaction was applied before: nothing changed.
    case stale
    /// The product is not one the served policy maps to a tier: nothing changed.
    case unknownProduct = "unknown_product"
}

extension IdentityService {
    // MARK: - Purchases (App Store signed transactions)

    /// Applies a StoreKit 2 signed transaction (`Transaction.jwsRepresentation`) to the signed-in account.
    ///
    /// The JWS is verified as Apple's App Store Server Library does (`AppStoreSignedDataVerifier`), its
    /// `bundleId` and `environment` must be configured ones, and then: the tier comes from `productTiers`
    /// (`unknown_product` otherwise) and the expiry from `expiresDate`; an `appAccountToken` must be the
    /// account's own (`app_account_mismatch`); an original transaction belongs to one account
    /// (`purchase_owned_elsewhere`); a replay, or an older transaction than the last applied, changes nothing.
    ///
    /// Revocations (issue 36, N2 and N5): a transaction carrying a `revocationDate` sets nothing, is written to the
    /// revocation ledger (whoever presents it) and ends the entitlement the original transaction granted its owner;
    /// a transaction signed at or before a revocation the ledger holds sets nothing (`revoked`), and neither does one
    /// no newer than a deleted account's tombstone of the original (`stale`). Every outcome is audited, never the JWS.
    public func recordPurchase(accessToken: String, signedTransaction: String, productTiers: [String: String]) async throws -> PurchaseResult {
        guard configuration.appStore.isConfigured else { throw Self.purchasesOff }
        let session = try await validate(accessToken: accessToken)
        let transaction: AppStoreTransaction
        do {
            transaction = try await verifiedTransaction(signedTransaction, field: "signedTransaction")
        } catch let error as IdentityError {
            try await auditPurchaseRefusal(error, userId: session.userId)
            throw error
        }
        let t = now()
        return try await commit { tx -> Result<PurchaseResult, IdentityError> in
            let s = try await self.liveSession(tx, accessToken, at: t)
            let user = try await self.user(tx, s.userId)
            func refuse(_ error: IdentityError) async throws -> Result<PurchaseResult, IdentityError> {
                try await self.auditRefusal(tx, .appStorePurchase, method: nil, reason: error.code.rawValue, user: user, scope: user.id, at: t)
                return .failure(error)
            }
            if let revokedAt = transaction.revokedAt {
                // Apple's word that the original is revoked, whoever presents it: the ledger keeps it and the owner's
                // entitlement from it ends.
                try await self.recordRevocation(tx, transaction.originalTransactionId, revokedAt: revokedAt, transaction: transaction, at: t)
                try await self.audit(tx, .appStorePurchase, outcome: .success, reason: PurchaseOutcome.revoked.rawValue, user: user, at: t)
                let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(user.id))
                return .success(PurchaseResult(outcome: .revoked, tier: sub?.tier, expiresAt: sub?.expiresAt))
            }
            guard let tier = productTiers[transaction.productId] else {
                return try await refuse(IdentityError(.unknownProduct, field: "signedTransaction.productId", "is not a product of the served policy"))
            }
            if let claimed = transaction.appAccountToken {
                let own = try await tx.fetchOne(AppAccountTokenRow.self, "userId", .text(user.id))?.token
                guard let own, Self.sameUUID(claimed, own) else {
                    return try await refuse(IdentityError(.appAccountMismatch, field: "signedTransaction.appAccountToken", "is not this account's appAccountToken"))
                }
            }
            let known = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(transaction.originalTransactionId))
            if let known, known.userId != user.id {
                return try await refuse(IdentityError(.purchaseOwnedElsewhere, field: "signedTransaction.originalTransactionId", "belongs to another account"))
            }
            let ledger = try await tx.fetchOne(AppStoreLedgerRow.self, "originalKey", .text(AppStoreLedgerRow.key(of: transaction.originalTransactionId)))
            let outcome: PurchaseOutcome
            if let known, known.transactionId == transaction.transactionId, Self.milliseconds(known.signedAt) == transaction.signedMilliseconds {
                outcome = .replayed
            } else if let known, transaction.signedMilliseconds < Self.milliseconds(known.signedAt) {
                outcome = .stale
            } else if let revokedAt = ledger?.revokedAt, transaction.signedMilliseconds <= Self.milliseconds(revokedAt) {
                // Signed before a refund or revocation of its original: the state it shows is gone.
                outcome = .revoked
            } else if known == nil, let last = ledger?.signedAt, transaction.signedMilliseconds <= Self.milliseconds(last) {
                // A deleted account's original transaction, no newer than what that account had applied.
                outcome = .stale
            } else {
                try await self.apply(tx, transaction, userId: user.id, tier: tier, expiresAt: transaction.expiresAt, at: t)
                outcome = .applied
            }
            try await self.audit(tx, .appStorePurchase, outcome: .success, reason: outcome == .applied ? "applied:\(tier)" : outcome.rawValue, user: user, at: t)
            let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(user.id))
            return .success(PurchaseResult(outcome: outcome, tier: sub?.tier, expiresAt: sub?.expiresAt))
        }
    }

    /// Applies an App Store Server Notification V2 (`signedPayload`), verified like a purchase, to the
    /// account that owns its original transaction. `DID_RENEW`, `EXPIRED` and `DID_CHANGE_RENEWAL_STATUS`
    /// set the tier's expiry to the transaction's `expiresDate`; `DID_FAIL_TO_RENEW` to the grace period's
    /// end when the renewal info has one; `REFUND` and `REVOKE` end the tier the transaction granted.
    /// Other types, unknown transactions, older transactions and unknown products change nothing (the
    /// route answers 200 so Apple does not retry); a payload that fails verification throws.
    ///
    /// Replays (issue 36, N4): a notification is applied once: its `notificationUUID` is remembered for
    /// `notificationWindow` and one signed longer ago is `stale`; a transaction must be strictly newer than the one
    /// applied for its original transaction; a notification sets the account's subscription only when that
    /// subscription is its own original transaction's (or there is none, or it has ended); and outcomes that change
    /// nothing are audited at most once per `AbuseLimits.refusalAuditInterval` per reason and account.
    public func handleAppStoreNotification(signedPayload: String, productTiers: [String: String]) async throws -> AppStoreNotificationOutcome {
        guard configuration.appStore.isConfigured else { throw Self.purchasesOff }
        let notification: AppStoreNotificationPayload
        var transaction: AppStoreTransaction?
        var renewal: AppStoreRenewalInfo?
        do {
            notification = try await appStoreVerifier.verify(signedPayload, as: AppStoreNotificationPayload.self, field: "signedPayload")
            if let data = notification.data {
                try checkAudience(bundleId: data.bundleId, environment: data.environment, field: "signedPayload.data")
                if AppStoreNotificationType(rawValue: notification.notificationType) != nil {
                    guard let signed = data.signedTransactionInfo else {
                        throw Self.malformed("signedPayload.data.signedTransactionInfo", "is required for this notification type")
                    }
                    transaction = try await verifiedTransaction(signed, field: "signedPayload.data.signedTransactionInfo")
                    if let signed = data.signedRenewalInfo {
                        renewal = try await appStoreVerifier.verify(signed, as: AppStoreRenewalInfo.self, field: "signedPayload.data.signedRenewalInfo")
                    }
                }
            }
        } catch let error as IdentityError {
            try await auditPurchaseRefusal(error, userId: nil, kind: .appStoreNotification)
            throw error
        }
        let t = now()
        let id = notification.notificationUUID
        guard !id.isEmpty, id.utf8.count <= 64 else {
            let error = Self.malformed("signedPayload.notificationUUID", "must be 1 to 64 bytes")
            try await auditPurchaseRefusal(error, userId: nil, kind: .appStoreNotification)
            throw error
        }
        let type = AppStoreNotificationType(rawValue: notification.notificationType)
        let renewalInfo = renewal, verified = transaction
        return try await store.write { tx in
            // Once each, and only while its id is remembered.
            try await tx.deleteAll(AppStoreNotificationSeenRow.self, "receivedAt", before: t.addingTimeInterval(-Self.notificationWindow))
            if Date(millisecondsSince1970: notification.signedDate) < t.addingTimeInterval(-Self.notificationWindow) {
                try await self.auditUnchangedNotification(tx, reason: "too_old:stale", user: nil, at: t)
                return .stale
            }
            if try await tx.fetchOne(AppStoreNotificationSeenRow.self, "notificationId", .text(id)) != nil {
                try await self.auditUnchangedNotification(tx, reason: "duplicate:stale", user: nil, at: t)
                return .stale
            }
            try await tx.insert(AppStoreNotificationSeenRow(notificationId: id, receivedAt: t))
            guard let type, let transaction = verified else {
                try await self.auditUnchangedNotification(tx, reason: AppStoreNotificationOutcome.ignoredType.rawValue, user: nil, at: t)
                return .ignoredType
            }
            let outcome = try await self.applyNotification(tx, type, transaction, renewal: renewalInfo, productTiers: productTiers, at: t)
            var actor: UserRow?
            if let row = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(transaction.originalTransactionId)) {
                actor = try await tx.fetchOne(UserRow.self, "id", .text(row.userId))
            }
            let reason = "\(type.rawValue):\(outcome.rawValue)"
            if outcome == .applied || outcome == .ended {
                try await self.audit(tx, .appStoreNotification, outcome: .success, reason: reason, user: actor, at: t)
            } else {
                try await self.auditUnchangedNotification(tx, reason: reason, user: actor, at: t)
            }
            return outcome
        }
    }

    /// How long a processed notification's id is remembered, and how old a notification may be: Apple retries a
    /// notification five times over about 6.5 days (1, 12, 24, 48 and 72 hours apart); a week covers them.
    static let notificationWindow: TimeInterval = 7 * 86400

    /// Audits a notification that changed nothing at most once per `refusalAuditInterval` per reason and account, so
    /// copies of one notification write one row, not one each.
    func auditUnchangedNotification(_ tx: any IdentityTransaction, reason: String, user: UserRow?, at t: Date) async throws {
        let counters = self.counters
        let key = "notification-audit:" + SecretCoding.hex(SecretCoding.sha256("\(reason)|\(user?.pseudonym ?? "-")").prefix(16))
        if let mark = try await tx.fetchOne(GuessLimitRow.self, "scope", .text(key)), t < mark.windowStart.addingTimeInterval(configuration.abuse.refusalAuditInterval) {
            tx.afterCommit { counters.add(.coalescedAuditRows) }
            return
        }
        try await tx.upsert(GuessLimitRow(scope: key, windowStart: t, failures: 1))
        try await audit(tx, .appStoreNotification, outcome: .success, reason: reason, user: user, at: t)
    }

    /// The account's `appAccountToken`, made on first use: a UUID the app passes to StoreKit's
    /// `Product.PurchaseOption.appAccountToken` so each transaction names the account it was bought for.
    func appAccountToken(_ tx: any IdentityTransaction, userId: String, at t: Date) async throws -> String {
        if let row = try await tx.fetchOne(AppAccountTokenRow.self, "userId", .text(userId)) { return row.token }
        let row = AppAccountTokenRow(userId: userId, token: newId(), createdAt: t)
        try await tx.insert(row)
        return row.token
    }

    // MARK: helpers

    private static let purchasesOff = IdentityError(
        .purchasesNotConfigured, field: "appStore.bundleIds", "App Store purchases are not configured on this server (--app-store-bundle-id)")

    private static func malformed(_ field: String, _ reason: String) -> IdentityError {
        IdentityError(.invalidSignedTransaction, field: field, reason)
    }

    /// A verified signed transaction of this app, in an accepted environment.
    private func verifiedTransaction(_ jws: String, field: String) async throws(IdentityError) -> AppStoreTransaction {
        let transaction = try await appStoreVerifier.verify(jws, as: AppStoreTransaction.self, field: field)
        try checkAudience(bundleId: transaction.bundleId, environment: transaction.environment, field: field)
        guard !transaction.originalTransactionId.isEmpty, transaction.originalTransactionId.utf8.count <= 64,
            !transaction.transactionId.isEmpty, transaction.transactionId.utf8.count <= 64, transaction.productId.utf8.count <= 255
        else { throw Self.malformed(field + ".originalTransactionId", "transaction ids must be 1 to 64 bytes") }
        return transaction
    }

    private func checkAudience(bundleId: String, environment: String, field: String) throws(IdentityError) {
        guard configuration.appStore.bundleIds.contains(bundleId) else {
            throw IdentityError(.appStoreWrongBundle, field: field + ".bundleId", "is not a configured bundle id")
        }
        guard let env = AppStoreEnvironment(rawValue: environment), configuration.appStore.environments.contains(env) else {
            throw IdentityError(.appStoreEnvironmentNotAllowed, field: field + ".environment", "is not an accepted environment")
        }
    }

    /// Audits a refusal that came before the store was read (verification), coalesced per user or for all
    /// anonymous senders, in a write of its own.
    private func auditPurchaseRefusal(_ error: IdentityError, userId: String?, kind: AuditKind = .appStorePurchase) async throws {
        let t = now()
        try await store.write { tx in
            var user: UserRow?
            if let userId { user = try await tx.fetchOne(UserRow.self, "id", .text(userId)) }
            try await self.auditRefusal(tx, kind, method: nil, reason: error.code.rawValue, user: user, scope: userId ?? "app-store-notification", at: t)
        }
    }

    /// Records the transaction as the account's and sets the subscription it grants.
    private func apply(
        _ tx: any IdentityTransaction, _ transaction: AppStoreTransaction, userId: String, tier: String, expiresAt: Date?, at t: Date,
        subscription: Bool = true
    ) async throws {
        try await tx.upsert(
            AppStoreTransactionRow(
                originalTransactionId: transaction.originalTransactionId, userId: userId, transactionId: transaction.transactionId,
                productId: transaction.productId, environment: transaction.environment, expiresAt: expiresAt, revokedAt: transaction.revokedAt,
                signedAt: transaction.signedAt, updatedAt: t))
        guard subscription else { return }
        try await tx.upsert(
            SubscriptionRow(
                userId: userId, tier: tier, productId: transaction.productId, expiresAt: expiresAt, updatedAt: t,
                originalTransactionId: transaction.originalTransactionId))
    }

    private func applyNotification(
        _ tx: any IdentityTransaction, _ type: AppStoreNotificationType, _ transaction: AppStoreTransaction, renewal: AppStoreRenewalInfo?,
        productTiers: [String: String], at t: Date
    ) async throws -> AppStoreNotificationOutcome {
        if type == .refund || type == .revoke || transaction.revocationDate != nil {
            // Kept in the ledger whether or not an account holds the transaction yet, and however late it arrives.
            let held = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(transaction.originalTransactionId)) != nil
            let ended = try await recordRevocation(tx, transaction.originalTransactionId, revokedAt: transaction.revokedAt ?? t, transaction: transaction, at: t)
            return ended ? .ended : held ? .stale : .unknownTransaction
        }
        guard let row = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(transaction.originalTransactionId)) else {
            return .unknownTransaction
        }
        // Strictly newer than what was applied for its original transaction, and not signed before a revocation of it.
        guard transaction.signedMilliseconds > Self.milliseconds(row.signedAt) else { return .stale }
        let ledger = try await tx.fetchOne(AppStoreLedgerRow.self, "originalKey", .text(AppStoreLedgerRow.key(of: transaction.originalTransactionId)))
        if let revokedAt = ledger?.revokedAt, transaction.signedMilliseconds <= Self.milliseconds(revokedAt) { return .stale }
        guard let tier = productTiers[transaction.productId] else { return .unknownProduct }
        var expiresAt = transaction.expiresAt
        if type == .didFailToRenew, let grace = renewal?.gracePeriodEndsAt, renewal?.originalTransactionId == transaction.originalTransactionId {
            expiresAt = max(expiresAt ?? grace, grace)
        }
        // The account's subscription is this original transaction's to change only when it is this original's, or
        // there is none, or it has ended: an old EXPIRED of one purchase never ends a tier another purchase grants.
        let current = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(row.userId))
        let own = current.map { $0.originalTransactionId == transaction.originalTransactionId || ($0.expiresAt.map { $0 <= t } ?? false) } ?? true
        try await apply(tx, transaction, userId: row.userId, tier: tier, expiresAt: expiresAt, at: t, subscription: own)
        return .applied
    }

    /// Writes a revocation of `original` at `revokedAt` to the ledger (the later of two dates kept) and, when an account
    /// holds the original with a transaction signed at or before it, ends the entitlement: the record is marked revoked
    /// and the account's subscription, if this original granted it, is removed. Returns whether an entitlement ended.
    @discardableResult
    func recordRevocation(_ tx: any IdentityTransaction, _ original: String, revokedAt: Date, transaction: AppStoreTransaction?, at t: Date)
        async throws -> Bool
    {
        let key = AppStoreLedgerRow.key(of: original)
        var entry = try await tx.fetchOne(AppStoreLedgerRow.self, "originalKey", .text(key)) ?? AppStoreLedgerRow(originalKey: key, updatedAt: t)
        entry.revokedAt = max(entry.revokedAt ?? revokedAt, revokedAt)
        entry.updatedAt = t
        try await tx.upsert(entry)
        guard var row = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(original)),
            Self.milliseconds(row.signedAt) <= Self.milliseconds(revokedAt)
        else { return false }  // none held, or held through a transaction signed after the revocation (bought again)
        row.revokedAt = revokedAt
        if let transaction, transaction.signedAt >= row.signedAt {
            row.transactionId = transaction.transactionId
            row.signedAt = transaction.signedAt
        }
        row.updatedAt = t
        try await tx.update(row)
        if let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(row.userId)), sub.originalTransactionId == original {
            try await tx.deleteAll(SubscriptionRow.self, ["userId": .text(row.userId)])
        }
        return true
    }

    /// Keeps a tombstone of each original transaction `userId` holds before the account goes: the ledger's dates, no
    /// user, so a later claim of the same transactions meets the same checks.
    func keepPurchaseTombstones(_ tx: any IdentityTransaction, of userId: String, at t: Date) async throws {
        for row in try await tx.fetchAll(AppStoreTransactionRow.self, "userId", .text(userId)) {
            let key = AppStoreLedgerRow.key(of: row.originalTransactionId)
            var entry = try await tx.fetchOne(AppStoreLedgerRow.self, "originalKey", .text(key)) ?? AppStoreLedgerRow(originalKey: key, updatedAt: t)
            entry.signedAt = max(entry.signedAt ?? row.signedAt, row.signedAt)
            if let revokedAt = row.revokedAt { entry.revokedAt = max(entry.revokedAt ?? revokedAt, revokedAt) }
            entry.updatedAt = t
            try await tx.upsert(entry)
        }
    }

    /// A stored date in whole milliseconds, as Apple dates are (the stores keep milliseconds; a `Double`
    /// of seconds does not round-trip exactly).
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// Two UUID texts name the same UUID (case-insensitive), compared in constant time.
    static func sameUUID(_ a: String, _ b: String) -> Bool {
        guard let x = UUID(uuidString: a), let y = UUID(uuidString: b) else { return false }
        return SecretCoding.constantTimeEqual(Data(x.uuidString.utf8), Data(y.uuidString.utf8))
    }
}
