import AppStoreTestSupport
import Foundation
import Gatehouse
import Synchronization

@testable import Identity

/// The writes that change a cached decision fact (issue 26), for the race tests of both stores: DecisionCacheTests
/// (SQLite, one process) and FactNotificationTests (PostgreSQL, two replicas).

/// A clock the race tests move by hand (a step-up must be later than the sign-in it follows).
public final class RaceClock: Sendable {
    private let current: Mutex<Date>
    public init(_ start: Date = Date(timeIntervalSince1970: 1_795_000_000)) { current = Mutex(start) }
    public var now: Date { current.withLock { $0 } }
    public func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Where a write is made: the identity service that writes, its clock, and the App Store signer it trusts.
public struct RaceWorld: Sendable {
    public static let bundleId = "com.example.gatehouse"
    public static let product = "com.example.pro.monthly"
    public static let productTiers = [product: "pro"]
    static let operatorToken = "race-operator-token"

    public let identity: IdentityService
    public let clock: RaceClock
    public let ca: AppStoreTestCA

    public init(identity: IdentityService, clock: RaceClock, ca: AppStoreTestCA) {
        self.identity = identity
        self.clock = clock
        self.ca = ca
    }

    /// Purchases on for `bundleId`, trusting `ca`; an operator credential for the Apple credential state; Apple's
    /// notices to `RaceApple.clientId` (the service must fetch Apple's keys from `RaceApple.shared.jwksFetcher`).
    public static func configure(_ configuration: inout IdentityConfiguration, ca: AppStoreTestCA) {
        configuration.appStore.bundleIds = [bundleId]
        try! configuration.appStore.addRootCertificate(ca.rootDER)
        configuration.operatorTokenDigests = [OperatorCredential.digest(of: operatorToken)]
        configuration.apple.clientIds.insert(RaceApple.clientId)
    }

    /// Links the Apple id `apple.<userId>` to the account, authorized, as a sign-in with Apple leaves it.
    static func linkApple(_ w: RaceWorld, _ a: RaceAccount) async throws {
        let t = w.clock.now
        let row = AppleIdentityRow(
            subject: "apple." + a.userId, userId: a.userId, email: nil, isPrivateRelay: false, credentialState: AppleCredentialState.authorized.rawValue,
            transferredTo: nil, createdAt: t, updatedAt: t, stateChangedAt: nil)
        try await w.identity.store.write { tx in try await tx.insert(row) }
    }

    /// Apple's signed notice of `type` about the account's Apple id, a second later, handled as the server's route
    /// handles Apple's POST; throws unless it set the credential state `state`.
    func handleAppleNotice(_ type: String, for a: RaceAccount, expecting state: AppleCredentialState) async throws {
        clock.advance(1)
        let notice = RaceApple.shared.notice(type: type, sub: "apple." + a.userId, at: clock.now)
        let outcome = try await identity.handleAppleNotification(signedPayload: notice)
        guard outcome == .applied(state) else { throw RaceSetupError("Apple's \(type) notice was \(outcome)") }
    }

    /// A signed transaction of `product` for `original`, signed now; `overrides` as `AppStoreTestCA.transaction`'s.
    func transaction(_ original: String, id: String? = nil, overrides: [String: Any] = [:]) -> String {
        let at = clock.now
        return ca.sign(
            AppStoreTestCA.transaction(
                bundleId: Self.bundleId, productId: Self.product, originalTransactionId: original, transactionId: id, signedAt: at,
                expiresAt: at.addingTimeInterval(30 * 86400), overrides: overrides))
    }
}

/// A signed-in user with a PIN (so it may create spaces) and a project it owns, with the resource to decide on.
public struct RaceAccount: Sendable {
    public var userId: String
    public var token: String
    public var refreshToken: String
    public var space: NewSpace
    /// The clock when it was made (a later verification is after it).
    public var createdAt: Date
    /// Its App Store original transaction id (unique to the account).
    public var originalTransactionId: String
    public var resource: Resource { Resource(type: "project", id: space.resourceId) }

    public static func make(_ w: RaceWorld) async throws -> RaceAccount {
        let signedIn = try await w.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
        _ = try await w.identity.setPIN(accessToken: signedIn.accessToken, pin: "4172")
        let refreshed = try await w.identity.refresh(refreshToken: signedIn.refreshToken)
        let space = try await w.identity.createSpace(accessToken: refreshed.accessToken, name: "P", type: "project", inviteRole: "editor")
        return RaceAccount(
            userId: signedIn.userId, token: refreshed.accessToken, refreshToken: refreshed.refreshToken, space: space, createdAt: w.clock.now,
            originalTransactionId: String(UInt64.random(in: 1_000_000_000_000_000...9_000_000_000_000_000)))
    }
}

/// One invalidating write: what it changes, and how a decision after it shows the new fact.
public struct InvalidatingWrite: Sendable, CustomStringConvertible {
    public var name: String
    /// What the account needs before the first decision (an Apple id, a purchase to refund).
    public var prepare: @Sendable (RaceWorld, RaceAccount) async throws -> Void = { _, _ in }
    /// Makes the change for the account; returns the token to decide with.
    public var change: @Sendable (RaceWorld, RaceAccount) async throws -> String
    /// Whether the resolved request shows the new fact.
    public var shows: @Sendable (ResolvedRequest, RaceAccount) -> Bool
    public var description: String { name }

    public init(
        name: String, prepare: @escaping @Sendable (RaceWorld, RaceAccount) async throws -> Void = { _, _ in },
        change: @escaping @Sendable (RaceWorld, RaceAccount) async throws -> String, shows: @escaping @Sendable (ResolvedRequest, RaceAccount) -> Bool
    ) {
        self.name = name
        self.prepare = prepare
        self.change = change
        self.shows = shows
    }

    /// Every write that changes a cached fact (sessions, subject facts, resource facts).
    public static let all: [InvalidatingWrite] = [
        InvalidatingWrite(
            name: "sign-out", change: { w, a in try await w.identity.signOut(accessToken: a.token); return a.token }, shows: { r, _ in r.tokenRejected }),
        InvalidatingWrite(
            name: "sign-out everywhere", change: { w, a in try await w.identity.signOutEverywhere(accessToken: a.token); return a.token },
            shows: { r, _ in r.tokenRejected }),
        InvalidatingWrite(
            name: "refresh", change: { w, a in _ = try await w.identity.refresh(refreshToken: a.refreshToken); return a.token },
            shows: { r, _ in r.tokenRejected }),
        InvalidatingWrite(
            name: "PIN verification (a step-up)",
            change: { w, a in
                w.clock.advance(1)
                _ = try await w.identity.verifyPIN(accessToken: a.token, pin: "4172")
                return a.token
            },
            shows: { r, a in r.tokenRejected || (r.request.subject.auth?.verifiedAt ?? .distantPast) > a.createdAt }),
        InvalidatingWrite(
            name: "subscription",
            change: { w, a in
                try await w.identity.recordSubscription(userId: a.userId, productId: "p", expiresAt: nil, productTiers: ["p": "pro"])
                return a.token
            }, shows: { r, _ in r.request.subject.tier == "pro" }),
        InvalidatingWrite(
            name: "App Store purchase",
            change: { w, a in
                let result = try await w.identity.recordPurchase(
                    accessToken: a.token, signedTransaction: w.transaction(a.originalTransactionId), productTiers: RaceWorld.productTiers)
                guard result.outcome == .applied else { throw RaceSetupError("the purchase was \(result.outcome)") }
                return a.token
            }, shows: { r, _ in r.request.subject.tier == "pro" }),
        InvalidatingWrite(
            name: "App Store notification (refund)",
            prepare: { w, a in
                _ = try await w.identity.recordPurchase(
                    accessToken: a.token, signedTransaction: w.transaction(a.originalTransactionId), productTiers: RaceWorld.productTiers)
            },
            change: { w, a in
                w.clock.advance(1)
                let refunded = w.transaction(
                    a.originalTransactionId, id: a.originalTransactionId + "1", overrides: ["revocationDate": AppStoreTestCA.ms(w.clock.now), "revocationReason": 1])
                let payload = w.ca.sign(
                    AppStoreTestCA.notification(type: "REFUND", bundleId: RaceWorld.bundleId, signedAt: w.clock.now, signedTransactionInfo: refunded))
                let outcome = try await w.identity.handleAppStoreNotification(signedPayload: payload, productTiers: RaceWorld.productTiers)
                guard outcome == .ended else { throw RaceSetupError("the refund was \(outcome)") }
                return a.token
            }, shows: { r, _ in r.request.subject.tier != "pro" }),
        InvalidatingWrite(
            name: "Apple credential state (revoked)", prepare: RaceWorld.linkApple,
            change: { w, a in
                try await w.identity.updateAppleCredentialState(
                    appleUserId: "apple." + a.userId, state: .revoked, operator: OperatorCredential(token: RaceWorld.operatorToken))
                return a.token
            }, shows: { r, _ in r.tokenRejected }),
        // Apple's own server-to-server notices (signed RS256 with Apple's keys): the user revoked Sign in with Apple,
        // or deleted the Apple account. Each ends every session of the user before it is acknowledged.
        InvalidatingWrite(
            name: "Apple notice (consent revoked)", prepare: RaceWorld.linkApple,
            change: { w, a in
                try await w.handleAppleNotice("consent-revoked", for: a, expecting: .revoked)
                return a.token
            }, shows: { r, _ in r.tokenRejected }),
        InvalidatingWrite(
            name: "Apple notice (account deleted)", prepare: RaceWorld.linkApple,
            change: { w, a in
                try await w.handleAppleNotice("account-delete", for: a, expecting: .notFound)
                return a.token
            }, shows: { r, _ in r.tokenRejected }),
        InvalidatingWrite(
            name: "app roles", change: { w, a in try await w.identity.setAppRoles(userId: a.userId, roles: ["admin"], declared: ["admin"]); return a.token },
            shows: { r, _ in r.request.subject.roles == ["admin"] }),
        InvalidatingWrite(
            name: "privacy settings",
            change: { w, a in
                try await w.identity.setPrivacySettings(accessToken: a.token, PrivacySettings(analytics: true, crashReporting: true, aiSuggestions: true))
                return a.token
            }, shows: { r, _ in r.request.subject.attributes == PrivacySettings(analytics: true, crashReporting: true, aiSuggestions: true).attributes }),
        InvalidatingWrite(
            name: "membership",
            change: { w, a in
                let other = try await w.identity.signInAnonymously(source: ClientSource(UUID().uuidString))
                let pinned = try await w.identity.setPIN(accessToken: other.accessToken, pin: "5817").accessToken
                _ = try await w.identity.joinSpace(accessToken: pinned, shareCode: a.space.shareCode, source: ClientSource(UUID().uuidString))
                return a.token
            }, shows: { r, _ in r.request.resource.members.count == 2 }),
        InvalidatingWrite(
            name: "resource usage",
            change: { w, a in _ = try await w.identity.incrementUsage(resourceId: a.space.resourceId, counter: "sources"); return a.token },
            shows: { r, _ in r.request.resource.usage["sources"] == 1 }),
        InvalidatingWrite(
            name: "account deletion", change: { w, a in try await w.identity.deleteAccount(accessToken: a.token); return a.token },
            shows: { r, _ in r.tokenRejected }),
    ]
}

/// A race's setup went wrong (not the fact under test).
public struct RaceSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
