import Foundation
import PolicyModel

/// The operator console's reads and writes (issue 43): find a user, the user's page, end sessions, end a subscription.
/// Every entry point takes the operator's credential and checks it (`authorizeOperator`); every write is audited on
/// the user's trail with the operator named as the one who acted (`OperatorCredential.auditLabel` in `method`).
extension IdentityService {
    /// The most users one search answers.
    package static let maxFoundUsers = 20

    /// The users `query` names: by user id, username, audit pseudonym (`p-...`), a decision record's keyed pseudonym
    /// (`u-...`), Sign in with Apple subject or App Store original transaction id, each an exact match (a username also
    /// lower-cased). Each found user says what matched. An empty or over-long query is `invalid_input` on `q`.
    ///
    /// A keyed pseudonym cannot be turned back into an id, and computing every user's would be a scan. Each decision
    /// record holds both pseudonyms of its subject (`subject`, indexed since v18, and `actor`, the audit pseudonym), so
    /// the newest records with that subject name the user through the indexed `pseudonym` column; the match is then
    /// checked exactly by computing the found user's keyed pseudonym: two indexed lookups and one HMAC. A user with no
    /// decision record is not found by one: there is no record that would have shown it.
    package func findUsers(_ query: String, operator credential: OperatorCredential) async throws -> [FoundUser] {
        try authorizeOperator(credential)
        let names = try await decisionPseudonyms()
        let q = query.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !q.isEmpty else { throw IdentityError.invalid("q", "must name a user id, username, pseudonym, Apple subject or original transaction id") }
        guard q.utf8.count <= 256 else { throw IdentityError.invalid("q", "must be at most 256 bytes") }
        return try await store.read { tx in
            var found: [(UserRow, String)] = []
            func add(_ user: UserRow?, _ how: String) {
                guard let user, !found.contains(where: { $0.0.id == user.id }) else { return }
                found.append((user, how))
            }
            add(try await tx.fetchOne(UserRow.self, "id", .text(q)), "id")
            add(try await tx.fetchOne(UserRow.self, "username", .text(q)), "username")
            if q.lowercased() != q { add(try await tx.fetchOne(UserRow.self, "username", .text(q.lowercased())), "username") }
            add(try await tx.fetchOne(UserRow.self, "pseudonym", .text(q)), "pseudonym")
            if q.hasPrefix("u-"), q.utf8.count == 34 {
                // One record is enough: every record of a user's subject carries the user's audit pseudonym (a record's
                // actor is nil only when its subject id was no user's when written, and then no user is to be found).
                if let actor = try await tx.fetchOne(DecisionLogRow.self, "subject", .text(q))?.actor,
                    let user = try await tx.fetchOne(UserRow.self, "pseudonym", .text(actor)), names.pseudonym(user.id) == q {
                    add(user, "decisionPseudonym")
                }
            }
            if let apple = try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(q)) {
                add(try await tx.fetchOne(UserRow.self, "id", .text(apple.userId)), "appleSubject")
            }
            if let purchase = try await tx.fetchOne(AppStoreTransactionRow.self, "originalTransactionId", .text(q)) {
                add(try await tx.fetchOne(UserRow.self, "id", .text(purchase.userId)), "originalTransactionId")
            }
            return found.prefix(Self.maxFoundUsers).map { FoundUser(account: $0.0, matchedBy: $0.1) }
        }
    }

    /// Everything the console's user page shows, from one snapshot: the account, its tier and where the tier came from,
    /// App Store transactions, app roles, spaces and memberships, sessions (live ones first), credential kinds (never a
    /// secret), privacy settings, and the newest `auditLimit` audit events of the user (App Store notifications among
    /// them, with their outcomes). `notFound` on `userId` for an unknown user.
    package func operatorUserPage(userId: String, auditLimit: Int = 50, operator credential: OperatorCredential) async throws -> OperatorUserPage {
        try authorizeOperator(credential)
        let t = now()
        let limit = try Self.pageLimit(auditLimit)
        return try await store.read { tx in
            let user = try await self.user(tx, userId)
            let subscription = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(userId))
            let transactions = try await tx.fetchAll(AppStoreTransactionRow.self, "userId", .text(userId))
            let roles = try await tx.fetchAll(AppRoleRow.self, "userId", .text(userId)).map(\.role).sorted()
            var spaces: [OperatorUserPage.Space] = []
            for m in try await tx.fetchAll(MembershipRow.self, "userId", .text(userId)) {
                guard let r = try await tx.fetchOne(ResourceRow.self, "id", .text(m.resourceId)) else { continue }
                let members = try await tx.fetchAll(MembershipRow.self, "resourceId", .text(r.id))
                spaces.append(
                    .init(
                        id: r.id, type: r.type, name: r.name, role: r.ownerId == userId ? "owner" : m.role, ownerId: r.ownerId,
                        members: members.map { .init(userId: $0.userId, role: $0.role) }.sorted { $0.userId < $1.userId }, joinedAt: m.joinedAt))
            }
            for r in try await tx.fetchAll(ResourceRow.self, "ownerId", .text(userId)) where !spaces.contains(where: { $0.id == r.id }) {
                let members = try await tx.fetchAll(MembershipRow.self, "resourceId", .text(r.id))
                spaces.append(
                    .init(
                        id: r.id, type: r.type, name: r.name, role: "owner", ownerId: r.ownerId,
                        members: members.map { .init(userId: $0.userId, role: $0.role) }.sorted { $0.userId < $1.userId }, joinedAt: r.createdAt))
            }
            let sessions = try await tx.fetchAll(SessionRow.self, "userId", .text(userId)).map { s in
                OperatorUserPage.Session(
                    id: s.id, method: s.authMethod, device: s.device, createdAt: s.createdAt, lastSeenAt: s.lastSeenAt, verifiedAt: s.verifiedAt, expiresAt: s.expiresAt,
                    live: self.isLive(s, at: t), revokedAt: s.revokedAt, revokedReason: s.revokedReason)
            }.sorted { ($0.live ? 1 : 0, $0.lastSeenAt) > ($1.live ? 1 : 0, $1.lastSeenAt) }
            var credentials: [OperatorUserPage.Credential] = []
            if let pin = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(userId)) {
                credentials.append(.init(kind: "pin", detail: pin.lockedAt == nil ? nil : "locked", since: pin.updatedAt))
            }
            for apple in try await tx.fetchAll(AppleIdentityRow.self, "userId", .text(userId)) {
                credentials.append(.init(kind: "apple", detail: apple.credentialState, since: apple.createdAt, appleSubject: apple.subject))
            }
            for key in try await tx.fetchAll(DeviceKeyRow.self, "userId", .text(userId)) {
                credentials.append(.init(kind: "device_key", detail: key.lockedAt == nil ? nil : "locked", since: key.createdAt, deviceId: key.deviceId))
            }
            let privacy = try await self.privacy(tx, userId)
            let audit = try await tx.fetchLog(AuditEventRow.self, LogQuery(equal: ["actor": .text(user.pseudonym)], limit: limit))
            let tier = OperatorUserPage.TierSource(subscription, at: t)
            return OperatorUserPage(
                user: FoundUser(account: user, matchedBy: "id"), tier: tier,
                transactions: transactions.sorted { $0.signedAt > $1.signedAt },
                roles: roles, spaces: spaces.sorted { $0.id < $1.id }, sessions: sessions, credentials: credentials, privacy: privacy,
                audit: audit)
        }
    }

    /// Ends one session of the user (an operator action): its tokens stop working at once, on every replica.
    /// `notFound` on `sessionId` for a session that is not the user's; ending an ended one changes nothing.
    package func endSession(userId: String, sessionId: String, operator credential: OperatorCredential) async throws {
        try authorizeOperator(credential)
        let t = now()
        let label = credential.auditLabel
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            guard var s = try await tx.fetchOne(SessionRow.self, "id", .text(sessionId)), s.userId == userId else {
                throw IdentityError(.notFound, field: "sessionId", "no such session of this user")
            }
            guard s.revokedAt == nil else { return }
            s.revokedAt = t
            s.revokedReason = "operator"
            try await tx.update(s)
            try await self.audit(tx, .sessionsRevoked, method: label, outcome: .success, reason: "sessions:1", user: user, at: t)
        }
    }

    /// Ends every session of the user (an operator action); returns how many were live enough to end.
    @discardableResult
    package func signOutEverywhere(userId: String, operator credential: OperatorCredential) async throws -> Int {
        try authorizeOperator(credential)
        let t = now()
        let label = credential.auditLabel
        return try await store.write { tx in
            let user = try await self.user(tx, userId)
            let count = try await self.revokeSessions(tx, of: userId, reason: "operator", at: t)
            try await self.audit(tx, .signOutEverywhere, method: label, outcome: .success, reason: "sessions:\(count)", user: user, at: t)
            return count
        }
    }

    /// Ends the user's subscription (an operator action): the user falls back to the policy's default tier. An App
    /// Store purchase recorded later sets it again. Ending none changes nothing but is audited.
    package func endSubscription(userId: String, operator credential: OperatorCredential) async throws {
        try authorizeOperator(credential)
        let t = now()
        let label = credential.auditLabel
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            let ended = try await tx.deleteAll(SubscriptionRow.self, ["userId": .text(userId)])
            try await self.audit(tx, .subscriptionChanged, method: label, outcome: .success, reason: ended > 0 ? "ended" : "none", user: user, at: t)
        }
    }

    /// `setAppRoles` as an operator: the credential checked and named on the audit row.
    package func setAppRoles(userId: String, roles: [String], declared: [String], operator credential: OperatorCredential) async throws {
        try authorizeOperator(credential)
        try await setAppRoles(userId: userId, roles: roles, declared: declared, auditMethod: credential.auditLabel)
    }

    /// `recordSubscription` as an operator: the credential checked and named on the audit row.
    package func recordSubscription(
        userId: String, productId: String, expiresAt: Date?, productTiers: [String: String], operator credential: OperatorCredential
    ) async throws {
        try authorizeOperator(credential)
        try await recordSubscription(userId: userId, productId: productId, expiresAt: expiresAt, productTiers: productTiers, auditMethod: credential.auditLabel)
    }

    /// The live session a decision for the user would come from now: `sessionId`'s when given (nil when it is not live),
    /// else the one seen last. Nil when the user has none: a real decision for them would find no session.
    package func liveSessionFacts(userId: String, sessionId: String?, operator credential: OperatorCredential) async throws -> (id: String, facts: SessionFacts)? {
        try authorizeOperator(credential)
        let t = now()
        return try await store.read { tx in
            _ = try await self.user(tx, userId)
            let live = try await tx.fetchAll(SessionRow.self, "userId", .text(userId)).filter { self.isLive($0, at: t) }
            let chosen: SessionRow?
            if let sessionId {
                chosen = live.first { $0.id == sessionId }
            } else {
                chosen = live.max { $0.lastSeenAt < $1.lastSeenAt }
            }
            guard let s = chosen else { return nil }
            let user = try await UserFacts.read(tx, userId: userId)
            let facts = SessionFacts(
                userId: userId,
                subject: Subject(
                    id: userId, tier: user.tier, subscriptionExpiry: user.subscriptionExpiry, roles: user.roles,
                    auth: Authentication(method: s.authMethod, verifiedAt: s.verifiedAt), attributes: user.privacy.attributes),
                userUsage: user.usage, expiresAt: s.expiresAt, accessExpiresAt: s.accessExpiresAt, lastSeenAt: s.lastSeenAt)
            return (s.id, facts)
        }
    }

    /// One decision record by id, for "explain this one again now": its action, resource and recorded request, and
    /// whether its subject is `userId` (by the keyed pseudonym). `notFound` on `decisionId` when there is none.
    package func decisionRecord(id: Int64, userId: String, operator credential: OperatorCredential) async throws -> OperatorDecisionRecord {
        try authorizeOperator(credential)
        let names = try await decisionPseudonyms()
        guard let row = try await store.read({ tx in try await tx.fetchOne(DecisionLogRow.self, "id", .int(Int(id))) }) else {
            throw IdentityError(.notFound, field: "decisionId", "no such decision record")
        }
        return OperatorDecisionRecord(
            id: id, action: row.action, resourceType: row.resourceType, resourceId: row.resourceId, effect: row.effect, reason: row.reason,
            facts: row.facts, isUsers: row.subject != nil && row.subject == names.pseudonym(userId))
    }

    /// Counts of the newest `limit` decision records by action, effect and reason (the decision log's sample: what
    /// `--decision-log` recorded), with the time span they cover.
    package func decisionCounts(limit: Int = 1_000, operator credential: OperatorCredential) async throws -> DecisionCounts {
        try authorizeOperator(credential)
        let q = LogQuery(limit: try Self.pageLimit(limit))
        let rows = try await store.read { tx in try await tx.fetchLog(DecisionLogRow.self, q) }
        var counts: [DecisionCounts.Key: Int] = [:]
        for row in rows { counts[.init(action: row.action, effect: row.effect, reason: row.reason), default: 0] += 1 }
        return DecisionCounts(records: rows.count, from: rows.last?.at, to: rows.first?.at, counts: counts)
    }
}

extension OperatorCredential {
    /// How audit rows name the operator who acted: `operator:` and the first 8 hex digits of the credential's SHA-256
    /// (the digest the configuration holds), so two operators' actions can be told apart and no token can be recovered.
    package var auditLabel: String { "operator:" + SecretCoding.hex(Self.digest(of: token).prefix(4)) }
}

/// A user a console search found: the account's row (its public columns: `UserRow` holds no secret) and what the
/// query matched. Its columns read as its own (`found.username`).
@dynamicMemberLookup
package struct FoundUser: Sendable, Hashable {
    package var account: UserRow
    /// `id`, `username`, `pseudonym`, `decisionPseudonym`, `appleSubject` or `originalTransactionId`.
    package var matchedBy: String

    /// The account's `column`.
    package subscript<Value>(dynamicMember column: KeyPath<UserRow, Value>) -> Value { account[keyPath: column] }
}

/// What the console's user page shows (`IdentityService.operatorUserPage`).
package struct OperatorUserPage: Sendable, Hashable {
    package var user: FoundUser
    package var tier: TierSource
    /// The account's App Store transactions, newest first (the controller shows the columns the console needs).
    package var transactions: [AppStoreTransactionRow]
    package var roles: [String]
    package var spaces: [Space]
    package var sessions: [Session]
    package var credentials: [Credential]
    package var privacy: PrivacySettings
    package var audit: [AuditEventRow]

    /// The stored tier and where it came from: `purchase` (an App Store transaction), `operator` (recorded by an
    /// operator route), `expired` (either, past its expiry: the engine decides with the default tier), `none`.
    package struct TierSource: Sendable, Hashable {
        package var tier: String?
        package var source: String
        package var productId: String?
        package var expiresAt: Date?
        package var originalTransactionId: String?
        package var updatedAt: Date?

        init(_ row: SubscriptionRow?, at t: Date) {
            guard let row else {
                source = "none"
                return
            }
            tier = row.tier
            productId = row.productId
            expiresAt = row.expiresAt
            originalTransactionId = row.originalTransactionId
            updatedAt = row.updatedAt
            if let expiry = row.expiresAt, expiry <= t {
                source = "expired"
            } else {
                source = row.originalTransactionId == nil ? "operator" : "purchase"
            }
        }
    }

    package struct Member: Sendable, Hashable {
        package var userId: String
        package var role: String
    }

    package struct Space: Sendable, Hashable {
        package var id: String
        package var type: String
        package var name: String
        /// The user's role in it (`owner` for the owner).
        package var role: String
        package var ownerId: String
        package var members: [Member]
        package var joinedAt: Date
    }

    /// A session: never its tokens or their hashes.
    package struct Session: Sendable, Hashable {
        package var id: String
        package var method: String
        /// What the sign-in said about its device (`SessionDevice`: the declared name and the User-Agent's product, or
        /// `enrolled device ...` once a device key verified it); nil for a session from before v20 or one that said nothing.
        package var device: String?
        package var createdAt: Date
        package var lastSeenAt: Date
        package var verifiedAt: Date
        package var expiresAt: Date
        package var live: Bool
        package var revokedAt: Date?
        package var revokedReason: String?
    }

    /// A credential's kind (`pin`, `apple`, `device_key`), never its secret.
    package struct Credential: Sendable, Hashable {
        package var kind: String
        /// `locked`, or an Apple credential state; nil when there is nothing to say.
        package var detail: String?
        package var since: Date
        package var appleSubject: String? = nil
        package var deviceId: String? = nil
    }
}

/// A decision record as "explain this one again now" reads it.
package struct OperatorDecisionRecord: Sendable, Hashable {
    package var id: Int64
    package var action: String
    package var resourceType: String
    package var resourceId: String?
    package var effect: String
    package var reason: String
    /// The request as decided (the contract's JSON, user ids pseudonymised); nil for an old or erased record.
    package var facts: String?
    /// Whether the record's subject is the user asked about.
    package var isUsers: Bool
}

/// Decision records counted by action, effect and reason.
package struct DecisionCounts: Sendable, Hashable {
    package struct Key: Sendable, Hashable {
        package var action: String
        package var effect: String
        package var reason: String
    }
    /// How many records were counted (the newest ones).
    package var records: Int
    package var from: Date?
    package var to: Date?
    package var counts: [Key: Int]
}
