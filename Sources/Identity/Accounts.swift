import Foundation
import PolicyModel

/// The privacy choices that gate what data may leave the device (seed 003); secure by default.
public struct PrivacySettings: Sendable, Hashable, Codable {
    /// Whether usage analytics may be collected.
    public var analytics: Bool
    /// Whether crash reports may be sent.
    public var crashReporting: Bool
    /// Requires sending data to an LLM service.
    public var aiSuggestions: Bool
    /// How much data may be shared with partners.
    public var dataSharing: DataSharing

    /// Settings with every choice given; each omitted one is off (`dataSharing` `.none`).
    public init(analytics: Bool = false, crashReporting: Bool = false, aiSuggestions: Bool = false, dataSharing: DataSharing = .none) {
        self.analytics = analytics
        self.crashReporting = crashReporting
        self.aiSuggestions = aiSuggestions
        self.dataSharing = dataSharing
    }

    /// The settings as `Subject.attributes`.
    public var attributes: [String: Value] {
        ["analytics": .bool(analytics), "crashReporting": .bool(crashReporting), "aiSuggestions": .bool(aiSuggestions), "dataSharing": .string(dataSharing.rawValue)]
    }
}

/// How much of a user's data may be shared with partners, least first; a policy reads it as
/// `subject.attributes.dataSharing`.
public enum DataSharing: String, Sendable, Hashable, Codable, CaseIterable {
    /// Nothing is shared.
    case none
    /// Only what a partner service needs to work.
    case minimal
    /// The app's usual sharing.
    case standard
}

/// The app roles a user may hold (seed 002); `setAppRoles` accepts only these, and a policy's `roles`
/// section names them.
public enum AppRole: String, Sendable, Hashable, CaseIterable {
    /// Browses and orders.
    case customer
    /// Delivers orders.
    case driver
    /// A business selling through the marketplace.
    case partner
    /// Administers the app (what that allows is up to the policy set).
    case admin
}

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
}

extension IdentityService {
    // MARK: - Accounts

    /// Creates an anonymous account and signs it in (seed 001's default path); counts against the
    /// source's sign-up limit (`AbuseLimits.signUps`).
    public func signInAnonymously(source: ClientSource) async throws -> SessionTokens {
        let t = now()
        return try await store.write { tx in
            try await self.checkSignUps(tx, source, at: t)
            try await self.countGuess(tx, self.signUpWindow(source), at: t)
            let user = try await self.insertUser(tx, at: t)
            let tokens = try await self.createSession(tx, userId: user.id, method: AuthMethod.anonymous, at: t)
            try await self.audit(tx, .signUp, method: AuthMethod.anonymous, outcome: .success, user: user, at: t)
            return tokens
        }
    }

    /// Gives the signed-in account a username, for username + PIN sign-in later. An account with a
    /// credential needs a verification by it within `reverificationWindow`; "is taken" answers count
    /// against the user and against `source` (`AbuseLimits.usernameProbes` per window each, the source's
    /// shared with registration), since anonymous accounts cost nothing to make.
    public func setUsername(accessToken: String, username: String) async throws {
        try await setUsername(accessToken: accessToken, username: username, source: .inProcess)
    }

    /// `setUsername(accessToken:username:)` with the client it comes from, for the per-source probe limit.
    public func setUsername(accessToken: String, username: String, source: ClientSource) async throws {
        try Self.validateUsername(username)
        let t = now()
        try await commit { tx -> Result<Void, IdentityError> in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, action: "setting the username")
            if let other = try await tx.fetchOne(UserRow.self, "username", .text(username)), other.id != s.userId {
                return .failure(try await self.takenAnswer(tx, scopes: ["username-probe-user:" + s.userId, "username-probe:" + source.digest], at: t))
            }
            var user = try await self.user(tx, s.userId)
            user.username = username
            try await tx.update(user)
            try await self.audit(tx, .usernameSet, outcome: .success, user: user, at: t)
            return .success(())
        }
    }

    // MARK: - Roles, subscriptions, privacy, usage

    /// Replaces a user's app roles (an operator action).
    public func setAppRoles(userId: String, roles: [String]) async throws {
        var valid: Set<String> = []
        for (i, role) in roles.enumerated() {
            guard AppRole(rawValue: role) != nil else { throw IdentityError.invalid("roles[\(i)]", "must be one of customer, driver, partner, admin") }
            valid.insert(role)
        }
        let t = now()
        let chosen = valid.sorted()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.deleteAll(AppRoleRow.self, ["userId": .text(userId)])
            for role in chosen { try await tx.insert(AppRoleRow(userId: userId, role: role)) }
            try await self.audit(tx, .rolesChanged, outcome: .success, reason: chosen.joined(separator: ","), user: user, at: t)
        }
    }

    /// Records a store purchase: the tier comes from the policy set's product-id mapping.
    public func recordSubscription(userId: String, productId: String, expiresAt: Date?, productTiers: [String: String]) async throws {
        guard let tier = productTiers[productId] else { throw IdentityError.invalid("productId", "is not a product of the policy set") }
        let t = now()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.upsert(SubscriptionRow(userId: userId, tier: tier, productId: productId, expiresAt: expiresAt, updatedAt: t))
            try await self.audit(tx, .subscriptionChanged, outcome: .success, reason: tier, user: user, at: t)
        }
    }

    /// The privacy settings of the session's user. Throws `unauthenticated` for a token that is not live.
    public func privacySettings(accessToken: String) async throws -> PrivacySettings {
        let s = try await validate(accessToken: accessToken)
        return try await store.read { tx in try await self.privacy(tx, s.userId) }
    }

    /// Replaces the session's user's privacy settings and audits the change. Throws `unauthenticated`
    /// for a token that is not live.
    public func setPrivacySettings(accessToken: String, _ settings: PrivacySettings) async throws {
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await tx.upsert(PrivacySettingsRow(userId: s.userId, analytics: settings.analytics, crashReporting: settings.crashReporting, aiSuggestions: settings.aiSuggestions, dataSharing: settings.dataSharing.rawValue, updatedAt: t))
            try await self.audit(tx, .privacyChanged, outcome: .success, user: try await self.user(tx, s.userId), at: t)
        }
    }

    func privacy(_ tx: any IdentityTransaction, _ userId: String) async throws -> PrivacySettings {
        guard let row = try await tx.fetchOne(PrivacySettingsRow.self, "userId", .text(userId)) else { return PrivacySettings() }
        return PrivacySettings(analytics: row.analytics, crashReporting: row.crashReporting, aiSuggestions: row.aiSuggestions, dataSharing: DataSharing(rawValue: row.dataSharing) ?? .none)
    }

    /// A counter moved by `delta`, refused when it would go below 0 or overflow.
    static func counter(_ value: Int, plus delta: Int) throws(IdentityError) -> Int {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        guard !overflow, sum >= 0 else { throw .invalid("delta", "would take the counter below 0 or overflow") }
        return sum
    }

    static func validateCounterName(_ name: String) throws(IdentityError) {
        guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F }) else {
            throw .invalid("counter", "must be 1 to 64 letters, digits or '_'")
        }
    }

    /// Adds `delta` to a resource's usage counter atomically and returns the new value (never below 0).
    @discardableResult
    public func incrementUsage(resourceId: String, counter: String, by delta: Int = 1) async throws -> Int {
        try Self.validateResourceId(resourceId, field: "resourceId")
        try Self.validateCounterName(counter)
        return try await store.write { tx in
            guard try await tx.fetchOne(ResourceRow.self, "id", .text(resourceId)) != nil else { throw IdentityError(.notFound, field: "resourceId", "no such resource") }
            var row = try await tx.fetchOne(UsageCounterRow.self, ["resourceId": .text(resourceId), "name": .text(counter)]) ?? UsageCounterRow(resourceId: resourceId, name: counter, value: 0)
            let sum = try Self.counter(row.value, plus: delta)
            row.value = sum
            try await tx.upsert(row)
            return sum
        }
    }

    /// Adds `delta` to one of a user's own usage counters (those app-wide limits consume, e.g.
    /// `sources`) atomically and returns the new value (never below 0). A server-side call: apps must
    /// not reach it, or they could lower their own usage.
    @discardableResult
    public func incrementUserUsage(userId: String, counter: String, by delta: Int = 1) async throws -> Int {
        try Self.validateCounterName(counter)
        return try await store.write { tx in
            _ = try await self.user(tx, userId)
            var row = try await tx.fetchOne(UserUsageCounterRow.self, ["userId": .text(userId), "name": .text(counter)]) ?? UserUsageCounterRow(userId: userId, name: counter, value: 0)
            let sum = try Self.counter(row.value, plus: delta)
            row.value = sum
            try await tx.upsert(row)
            return sum
        }
    }

    /// A user's own usage counters, by name.
    public func userUsage(userId: String) async throws -> [String: Int] {
        try await store.read { tx in try await self.userUsage(tx, userId) }
    }

    func userUsage(_ tx: any IdentityTransaction, _ userId: String) async throws -> [String: Int] {
        var usage: [String: Int] = [:]
        for u in try await tx.fetchAll(UserUsageCounterRow.self, "userId", .text(userId)) { usage[u.name] = u.value }
        return usage
    }

    // MARK: - What the facade joins

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
        guard let r = try await tx.fetchOne(ResourceRow.self, "id", .text(resourceId)) else { return nil }
        var members: [String: String] = [:]
        for m in try await tx.fetchAll(MembershipRow.self, "resourceId", .text(resourceId)) { members[m.userId] = m.role }
        var usage: [String: Int] = [:]
        for u in try await tx.fetchAll(UsageCounterRow.self, "resourceId", .text(resourceId)) { usage[u.name] = u.value }
        return ResourceFacts(id: r.id, type: r.type, ownerId: r.ownerId, members: members, usage: usage)
    }

    /// Everything a decision for the holder of `accessToken` needs from the store, read in one transaction (one
    /// snapshot): the session's subject, the resource's owner, members and usage, and, for a resource the store does
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
        let (facts, seen) = try await store.read { tx -> (DecisionFacts, Bool) in
            var facts = DecisionFacts(tokenGiven: accessToken != nil)
            var seen = false
            if let hash, let s = try await self.liveSession(tx, accessTokenHash: hash, at: t) {
                facts.subject = try await self.subject(tx, userId: s.userId, method: s.authMethod, verifiedAt: s.verifiedAt)
                seen = self.needsSeen(s, at: t)
            }
            if let resourceId, let stored = try await self.resourceFacts(tx, resourceId), sharedTypes?.contains(stored.type) ?? true {
                facts.resource = stored
            }
            if facts.resource == nil, let userId = facts.subject?.id { facts.userUsage = try await self.userUsage(tx, userId) }
            return (facts, seen)
        }
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

/// What the signed-in user may see of their own account (`GET /v1/me`): no secret, hash or key material.
public struct AccountProfile: Sendable, Hashable {
    /// The account's id.
    public var userId: String
    /// The username for PIN sign-in, if one was set.
    public var username: String?
    /// The name Apple gave on the first sign-in, if any.
    public var displayName: String?
    /// The email Apple gave, if any; possibly a private relay address.
    public var email: String?
    /// Whether `email` is an Apple private relay address.
    public var isPrivateRelayEmail: Bool
    /// The Apple ids (`sub`) linked to the account.
    public var appleUserIds: [String]
    /// Whether a PIN is set (never the PIN or its hash).
    public var hasPIN: Bool
    /// The devices with an enrolled key, by the id the app gave them.
    public var deviceIds: [String]
    /// The app roles held (`AppRole` raw values).
    public var appRoles: [String]
    /// The stored subscription tier and its expiry (the policy decides what a lapsed one is worth).
    public var tier: String?
    /// When the stored subscription ends; nil for none or one without an end.
    public var subscriptionExpiresAt: Date?
    /// The UUID the app passes to StoreKit as the purchase option `appAccountToken`; a signed transaction
    /// that carries another one is refused (`app_account_mismatch`).
    public var appAccountToken: String = ""
}

extension IdentityService {
    /// The account of a live session, as its owner may see it; any live session suffices (it reveals no secret).
    /// The account's `appAccountToken` is made on the first call (a write), read after that.
    public func profile(accessToken: String) async throws -> AccountProfile {
        let s = try await validate(accessToken: accessToken)
        var token = try await store.read { tx in try await tx.fetchOne(AppAccountTokenRow.self, "userId", .text(s.userId))?.token }
        if token == nil {
            let t = now()
            token = try await store.write { tx in try await self.appAccountToken(tx, userId: s.userId, at: t) }
        }
        let appAccountToken = token ?? ""
        return try await store.read { tx in
            let u = try await self.user(tx, s.userId)
            let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(u.id))
            return AccountProfile(
                userId: u.id, username: u.username, displayName: u.displayName, email: u.email,
                isPrivateRelayEmail: u.isPrivateRelayEmail,
                appleUserIds: try await tx.fetchAll(AppleIdentityRow.self, "userId", .text(u.id)).map(\.subject).sorted(),
                hasPIN: try await tx.fetchOne(PINCredentialRow.self, "userId", .text(u.id)) != nil,
                deviceIds: try await tx.fetchAll(DeviceKeyRow.self, "userId", .text(u.id)).map(\.deviceId).sorted(),
                appRoles: try await tx.fetchAll(AppRoleRow.self, "userId", .text(u.id)).map(\.role).sorted(),
                tier: sub?.tier, subscriptionExpiresAt: sub?.expiresAt, appAccountToken: appAccountToken)
        }
    }
}
