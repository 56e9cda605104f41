import AppStoreTestSupport
import Crypto
import Foundation
import PolicyModel
import Testing

@testable import Identity

/// Issue 22 §1: only App Store signed transactions and notifications, verified as Apple's App Store Server
/// Library does, change a tier. The tests play Apple with their own CA, configured as an extra root.
@Suite(.storeScope) struct AppStoreTests {
    static let bundleId = "com.example.gatehouse"
    static let product = "com.example.pro.monthly"
    static let products = [product: "pro", "com.example.team.monthly": "team"]

    /// A harness whose App Store configuration trusts `ca` (besides Apple's root) for `bundleId`.
    func harness(_ store: StoreKind, _ ca: AppStoreTestCA, environments: Set<AppStoreEnvironment> = [.production]) async throws -> Harness {
        try await Harness(store) { config in
            config.appStore.bundleIds = [Self.bundleId]
            config.appStore.environments = environments
            try! config.appStore.addRootCertificate(ca.rootDER)
        }
    }

    func transaction(
        _ h: Harness, _ ca: AppStoreTestCA, original: String = "2000000000000001", id: String? = nil, product: String = product,
        expires: TimeInterval? = 30 * 86400, signedAt: Date? = nil, token: String? = nil, overrides: [String: Any] = [:]
    ) -> String {
        let at = signedAt ?? h.clock.now
        return ca.sign(
            AppStoreTestCA.transaction(
                bundleId: Self.bundleId, productId: product, originalTransactionId: original, transactionId: id, signedAt: at,
                expiresAt: expires.map { at.addingTimeInterval($0) }, appAccountToken: token, overrides: overrides))
    }

    func subscription(_ h: Harness, _ userId: String) async throws -> SubscriptionRow? {
        try await h.rows(SubscriptionRow.self).first { $0.userId == userId }
    }

    // MARK: the shipped root

    @Test func theShippedAppleRootIsThePinnedOne() throws {
        #expect(AppleRootCertificate.fingerprint == AppleRootCertificate.pinnedFingerprint)
        // Apple's published SHA-256 of Apple Root CA - G3.
        #expect(AppleRootCertificate.pinnedFingerprint == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179".lowercased())
        #expect(AppleRootCertificate.matchesPin)
        let root = try #require(AppleRootCertificate.certificate)
        #expect(root.subject.description.contains("Apple Root CA - G3"))
        #expect(AppStoreConfiguration().trustedRoots.count == 1)
    }

    // MARK: purchases

    @Test(arguments: StoreKind.testable) func aVerifiedTransactionSetsTheTierAndAReplayChangesNothing(store: StoreKind) async throws {
        let ca = try AppStoreTestCA(now: TestClock().now)
        let h = try await harness(store, ca)
        // A signedDate with milliseconds, which a Double of seconds does not carry exactly through the store.
        h.clock.advance(0.123)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let jws = transaction(h, ca)
        let first = try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: jws, productTiers: Self.products)
        #expect(first.outcome == .applied && first.tier == "pro")
        // Apple's dates are whole milliseconds; PostgreSQL keeps microseconds, so compare those milliseconds.
        #expect(first.expiresAt.map(AppStoreTestCA.ms) == AppStoreTestCA.ms(h.clock.now.addingTimeInterval(30 * 86400)))
        let subject = try await h.service.subject(accessToken: user.accessToken)
        #expect(subject.tier == "pro" && subject.subscriptionExpiry == first.expiresAt)
        h.clock.advance(60)
        let again = try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: jws, productTiers: Self.products)
        #expect(again.outcome == .replayed && again.tier == "pro" && again.expiresAt == first.expiresAt)
        #expect(try await h.rows(AppStoreTransactionRow.self).count == 1)
        let updatedAt = try #require(try await subscription(h, user.userId)?.updatedAt)
        #expect(AppStoreTestCA.ms(updatedAt) == AppStoreTestCA.ms(h.clock.now.addingTimeInterval(-60)))
        // An older transaction of the same original one changes nothing.
        let older = transaction(h, ca, id: "2000000000000000", expires: 86400, signedAt: h.clock.now.addingTimeInterval(-3600))
        #expect(try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: older, productTiers: Self.products).outcome == .stale)
        #expect(try await subscription(h, user.userId)?.expiresAt == first.expiresAt)
        // The audit says what happened, never the JWS.
        let audit = try await h.auditRows().filter { $0.kind == "app_store_purchase" }
        #expect(audit.map(\.reason) == ["applied:pro", "replayed", "stale"])
        let dump = try await h.dumpAllTables()
        #expect(!dump.contains(jws.split(separator: ".")[2]) && !dump.contains(jws.split(separator: ".")[0]))
    }

    /// Every way a signed transaction can be forged or foreign, each refused at its own code.
    enum Refusal: String, CaseIterable, Sendable {
        case flippedSignatureByte, payloadEditedUnderOldSignature, chainToAnotherRoot, leafWithoutMarker, intermediateWithoutMarker
        case certificateExpiredAtSignedDate, foreignBundleId, disallowedEnvironment, algorithmOtherThanES256, notAJWS

        var code: IdentityError.Code {
            switch self {
            case .flippedSignatureByte, .payloadEditedUnderOldSignature: .appStoreSignatureInvalid
            case .chainToAnotherRoot: .appStoreUntrustedChain
            case .leafWithoutMarker, .intermediateWithoutMarker: .appStoreMarkerMissing
            case .certificateExpiredAtSignedDate: .appStoreCertificateExpired
            case .foreignBundleId: .appStoreWrongBundle
            case .disallowedEnvironment: .appStoreEnvironmentNotAllowed
            case .algorithmOtherThanES256: .appStoreAlgorithmNotES256
            case .notAJWS: .invalidSignedTransaction
            }
        }
    }

    func forged(_ refusal: Refusal, _ h: Harness, _ ca: AppStoreTestCA) throws -> String {
        let now = h.clock.now
        let claims = AppStoreTestCA.transaction(bundleId: Self.bundleId, productId: Self.product, signedAt: now, expiresAt: now.addingTimeInterval(86400))
        switch refusal {
        case .flippedSignatureByte:
            let jws = ca.sign(claims)
            var signature = try #require(SecretCoding.fromBase64URL(jws.split(separator: ".")[2]))
            signature[5] ^= 0x01
            return jws.split(separator: ".")[0...1].joined(separator: ".") + "." + SecretCoding.base64URL(signature)
        case .payloadEditedUnderOldSignature:
            let parts = ca.sign(claims).split(separator: ".").map(String.init)
            var edited = claims
            edited["productId"] = "com.example.team.monthly"
            let payload = SecretCoding.base64URL(try JSONSerialization.data(withJSONObject: edited, options: [.sortedKeys]))
            return parts[0] + "." + payload + "." + parts[2]
        case .chainToAnotherRoot:
            return try AppStoreTestCA(name: "Other", now: now).sign(claims)
        case .leafWithoutMarker:
            return try AppStoreTestCA(now: now, leafMarker: false).sign(claims)
        case .intermediateWithoutMarker:
            return try AppStoreTestCA(now: now, intermediateMarker: false).sign(claims)
        case .certificateExpiredAtSignedDate:
            return try AppStoreTestCA(now: now, leafNotBefore: now.addingTimeInterval(-2 * 86400), leafNotAfter: now.addingTimeInterval(-86400)).sign(claims)
        case .foreignBundleId:
            var c = claims
            c["bundleId"] = "com.attacker.app"
            return ca.sign(c)
        case .disallowedEnvironment:
            var c = claims
            c["environment"] = "Sandbox"
            return ca.sign(c)
        case .algorithmOtherThanES256:
            return ca.sign(claims, header: ["alg": "ES384"])
        case .notAJWS:
            return "not.a-jws"
        }
    }

    @Test(arguments: StoreKind.testable, Refusal.allCases) func aForgedOrForeignTransactionIsRefusedAtItsOwnCode(store: StoreKind, refusal: Refusal) async throws {
        let now = TestClock().now
        // The markers' and the expiry's chains must be trusted: everything else is right, so only that check fails.
        let ca: AppStoreTestCA
        switch refusal {
        case .leafWithoutMarker: ca = try AppStoreTestCA(now: now, leafMarker: false)
        case .intermediateWithoutMarker: ca = try AppStoreTestCA(now: now, intermediateMarker: false)
        case .certificateExpiredAtSignedDate: ca = try AppStoreTestCA(now: now, leafNotBefore: now.addingTimeInterval(-2 * 86400), leafNotAfter: now.addingTimeInterval(-86400))
        default: ca = try AppStoreTestCA(now: now)
        }
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let jws: String
        switch refusal {
        case .leafWithoutMarker, .intermediateWithoutMarker, .certificateExpiredAtSignedDate:
            jws = ca.sign(AppStoreTestCA.transaction(bundleId: Self.bundleId, productId: Self.product, signedAt: now, expiresAt: now.addingTimeInterval(86400)))
        default: jws = try forged(refusal, h, ca)
        }
        let error = await identityError { try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: jws, productTiers: Self.products) }
        #expect(error?.code == refusal.code, "\(refusal): \(String(describing: error))")
        #expect(error?.field.hasPrefix("signedTransaction") == true)
        #expect(try await subscription(h, user.userId) == nil)
        #expect(try await h.rows(AppStoreTransactionRow.self).isEmpty)
        let audit = try await h.auditRows().filter { $0.kind == "app_store_purchase" }
        #expect(audit.map(\.reason) == [refusal.code.rawValue] && audit.first?.outcome == "failure")
    }

    @Test(arguments: StoreKind.testable) func sandboxIsAcceptedOnlyWhenConfigured(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca, environments: [.production, .sandbox])
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let jws = transaction(h, ca, overrides: ["environment": "Sandbox"])
        #expect(try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: jws, productTiers: Self.products).tier == "pro")
    }

    @Test(arguments: StoreKind.testable) func theAppAccountTokenMustBeTheAccountsOwn(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let token = try await h.service.profile(accessToken: user.accessToken).appAccountToken
        #expect(UUID(uuidString: token) != nil)
        #expect(try await h.service.profile(accessToken: user.accessToken).appAccountToken == token)
        let foreign = transaction(h, ca, token: UUID().uuidString.lowercased())
        let error = await identityError { try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: foreign, productTiers: Self.products) }
        #expect(error?.code == .appAccountMismatch && error?.field == "signedTransaction.appAccountToken")
        #expect(try await subscription(h, user.userId) == nil)
        // Its own token, in StoreKit's upper case, is accepted.
        let own = transaction(h, ca, original: "2000000000000002", token: token.uppercased())
        #expect(try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: own, productTiers: Self.products).outcome == .applied)
        // An account that never had a token refuses any token.
        let other = try await h.service.signInAnonymously(source: .inProcess)
        let claimed = transaction(h, ca, original: "2000000000000003", token: token)
        #expect(await identityError { try await h.service.recordPurchase(accessToken: other.accessToken, signedTransaction: claimed, productTiers: Self.products) }?.code == .appAccountMismatch)
    }

    @Test(arguments: StoreKind.testable) func anOriginalTransactionBelongsToOneAccount(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let (alice, bob) = (try await h.service.signInAnonymously(source: .inProcess), try await h.service.signInAnonymously(source: .inProcess))
        let jws = transaction(h, ca)
        _ = try await h.service.recordPurchase(accessToken: alice.accessToken, signedTransaction: jws, productTiers: Self.products)
        let error = await identityError { try await h.service.recordPurchase(accessToken: bob.accessToken, signedTransaction: jws, productTiers: Self.products) }
        #expect(error?.code == .purchaseOwnedElsewhere && error?.field == "signedTransaction.originalTransactionId")
        #expect(try await subscription(h, bob.userId) == nil)
        #expect(try await h.rows(AppStoreTransactionRow.self).map(\.userId) == [alice.userId])
    }

    @Test(arguments: StoreKind.testable) func aRevokedTransactionSetsNothing(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let revoked = transaction(h, ca, overrides: ["revocationDate": AppStoreTestCA.ms(now), "revocationReason": 0])
        let result = try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: revoked, productTiers: Self.products)
        #expect(result.outcome == .revoked && result.tier == nil)
        #expect(try await subscription(h, user.userId) == nil)
        #expect(try await h.rows(AppStoreTransactionRow.self).isEmpty)
    }

    @Test(arguments: StoreKind.testable) func aProductThePolicyDoesNotMapIsRefused(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let jws = transaction(h, ca, product: "com.example.coins.100")
        let error = await identityError { try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: jws, productTiers: Self.products) }
        #expect(error?.code == .unknownProduct && error?.field == "signedTransaction.productId")
        #expect(try await subscription(h, user.userId) == nil)
    }

    @Test func withoutABundleIdPurchasesAreNotConfigured() async throws {
        let h = try await Harness()
        let ca = try AppStoreTestCA(now: h.clock.now)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let error = await identityError { try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: transaction(h, ca), productTiers: Self.products) }
        #expect(error?.code == .purchasesNotConfigured)
        #expect(await identityError { try await h.service.handleAppStoreNotification(signedPayload: "x.y.z", productTiers: Self.products) }?.code == .purchasesNotConfigured)
    }

    /// Found by the app-store-jws fuzz target (round r10): a `signedDate` after the year 9999 trapped the process in
    /// swift-certificates (its GeneralizedTime stops at 9999, and the chain check is dated at `signedDate`). The
    /// signature is checked under the leaf the token itself carries, so anyone with a key of their own could send one:
    /// it must be refused, naming the field, whoever signed it.
    @Test func aSignedDateAfterTheYear9999IsRefusedNotATrap() async throws {
        let now = Date(timeIntervalSince1970: 1_795_348_800)
        let trusted = try AppStoreTestCA(name: "Trusted", now: now)
        var configuration = AppStoreConfiguration()
        configuration.bundleIds = [Self.bundleId]
        try configuration.addRootCertificate(trusted.rootDER)
        let verifier = AppStoreSignedDataVerifier(configuration: configuration)
        for ca in [trusted, try AppStoreTestCA(name: "Anyone", now: now)] {
            for ms in [253_402_300_800_000.0, 6_416_941_100_000_000, 1e300] {
                let claims = AppStoreTestCA.transaction(
                    bundleId: Self.bundleId, productId: Self.product, signedAt: now, expiresAt: now.addingTimeInterval(86400),
                    overrides: ["signedDate": ms])
                do {
                    _ = try await verifier.verify(ca.sign(claims), as: AppStoreTransaction.self, field: "signedTransaction")
                    Issue.record("a signedDate of \(ms) ms was accepted")
                } catch {
                    #expect(error.field == "signedTransaction.signedDate", "\(ms): \(error.field) \(error.reason)")
                }
            }
        }
    }

    @Test func aConfiguredRootMustBeACertificate() {
        var config = AppStoreConfiguration()
        #expect(throws: IdentityError.self) { try config.addRootCertificate(Data("not a certificate".utf8)) }
        #expect(config.additionalRoots.isEmpty)
    }

    @Test func aPEMRootIsAcceptedAsWellAsDER() throws {
        let ca = try AppStoreTestCA(now: Date())
        var config = AppStoreConfiguration()
        try config.addRootCertificate(Data(ca.rootPEM.utf8))
        #expect(config.additionalRoots == [ca.rootDER])
    }

    // MARK: notifications

    /// An account that bought `product` a day ago (expiring in 29 days), and a notification maker.
    struct Subscribed {
        var h: Harness
        var ca: AppStoreTestCA
        var user: SessionTokens
        var expiry: Date
    }

    func subscribed(_ store: StoreKind) async throws -> Subscribed {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let bought = transaction(h, ca, signedAt: now.addingTimeInterval(-86400))
        let result = try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: bought, productTiers: Self.products)
        return Subscribed(h: h, ca: ca, user: user, expiry: try #require(result.expiresAt))
    }

    func notify(
        _ s: Subscribed, _ type: String, subtype: String? = nil, transaction: [String: Any]? = nil, renewal: [String: Any]? = nil
    ) async throws -> AppStoreNotificationOutcome {
        let now = s.h.clock.now
        let info = transaction.map { s.ca.sign($0) }
        let payload = AppStoreTestCA.notification(
            type: type, subtype: subtype, bundleId: Self.bundleId, signedAt: now, signedTransactionInfo: info, signedRenewalInfo: renewal.map { s.ca.sign($0) })
        return try await s.h.service.handleAppStoreNotification(signedPayload: s.ca.sign(payload), productTiers: Self.products)
    }

    func renewedTransaction(_ s: Subscribed, expires: Date, overrides: [String: Any] = [:]) -> [String: Any] {
        AppStoreTestCA.transaction(
            bundleId: Self.bundleId, productId: Self.product, originalTransactionId: "2000000000000001", transactionId: "2000000000000009",
            signedAt: s.h.clock.now, expiresAt: expires, overrides: overrides)
    }

    @Test(arguments: StoreKind.testable) func didRenewExtendsTheTier(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let next = s.expiry.addingTimeInterval(30 * 86400)
        #expect(try await notify(s, "DID_RENEW", transaction: renewedTransaction(s, expires: next)) == .applied)
        let sub = try await subscription(s.h, s.user.userId)
        #expect(sub?.tier == "pro" && sub?.expiresAt == next)
        #expect(try await s.h.rows(AppStoreTransactionRow.self).first?.transactionId == "2000000000000009")
        let audit = try await s.h.auditRows().filter { $0.kind == "app_store_notification" }
        #expect(audit.map(\.reason) == ["DID_RENEW:applied"] && audit.first?.actor != nil)
    }

    @Test(arguments: StoreKind.testable) func expiredEndsTheTierAtItsExpiry(store: StoreKind) async throws {
        let s = try await subscribed(store)
        s.h.clock.advance(30 * 86400)
        let ended = s.h.clock.now.addingTimeInterval(-86400)
        #expect(try await notify(s, "EXPIRED", subtype: "VOLUNTARY", transaction: renewedTransaction(s, expires: ended)) == .applied)
        let sub = try await subscription(s.h, s.user.userId)
        #expect(sub?.tier == "pro" && sub?.expiresAt == ended && ended < s.h.clock.now)
    }

    @Test(arguments: StoreKind.testable) func didFailToRenewKeepsTheTierThroughTheGracePeriod(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let grace = s.expiry.addingTimeInterval(16 * 86400)
        let renewal: [String: Any] = [
            "originalTransactionId": "2000000000000001", "environment": "Production", "signedDate": AppStoreTestCA.ms(s.h.clock.now),
            "autoRenewStatus": 1, "gracePeriodExpiresDate": AppStoreTestCA.ms(grace), "productId": Self.product, "autoRenewProductId": Self.product,
        ]
        let outcome = try await notify(s, "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: renewedTransaction(s, expires: s.expiry), renewal: renewal)
        #expect(outcome == .applied)
        #expect(try await subscription(s.h, s.user.userId)?.expiresAt == grace)
    }

    @Test(arguments: StoreKind.testable, ["REFUND", "REVOKE"]) func aRefundOrRevocationEndsTheTierItGranted(store: StoreKind, type: String) async throws {
        let s = try await subscribed(store)
        let revoked = renewedTransaction(s, expires: s.expiry, overrides: ["revocationDate": AppStoreTestCA.ms(s.h.clock.now), "revocationReason": 1])
        #expect(try await notify(s, type, transaction: revoked) == .ended)
        #expect(try await subscription(s.h, s.user.userId) == nil)
        #expect(try await s.h.rows(AppStoreTransactionRow.self).first?.revokedAt == s.h.clock.now)
        // The purchase presented again (signed before the refund) changes nothing now.
        let old = transaction(s.h, s.ca, signedAt: s.h.clock.now.addingTimeInterval(-86400))
        #expect(try await s.h.service.recordPurchase(accessToken: s.user.accessToken, signedTransaction: old, productTiers: Self.products).outcome == .stale)
        #expect(try await subscription(s.h, s.user.userId) == nil)
    }

    @Test(arguments: StoreKind.testable) func aRefundOfAnotherTransactionLeavesTheCurrentTier(store: StoreKind) async throws {
        let s = try await subscribed(store)
        // A second subscription, bought later, is the account's current one.
        let team = transaction(s.h, s.ca, original: "3000000000000001", product: "com.example.team.monthly")
        _ = try await s.h.service.recordPurchase(accessToken: s.user.accessToken, signedTransaction: team, productTiers: Self.products)
        let revoked = renewedTransaction(s, expires: s.expiry, overrides: ["revocationDate": AppStoreTestCA.ms(s.h.clock.now)])
        #expect(try await notify(s, "REFUND", transaction: revoked) == .ended)
        #expect(try await subscription(s.h, s.user.userId)?.tier == "team")
    }

    @Test(arguments: StoreKind.testable) func didChangeRenewalStatusKeepsTheTierToItsExpiry(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let before = try await subscription(s.h, s.user.userId)
        #expect(try await notify(s, "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: renewedTransaction(s, expires: s.expiry)) == .applied)
        let after = try await subscription(s.h, s.user.userId)
        #expect(after?.tier == before?.tier && after?.expiresAt == before?.expiresAt)
    }

    @Test(arguments: StoreKind.testable) func unknownTypesAndTransactionsChangeNothing(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let before = try await subscription(s.h, s.user.userId)
        #expect(try await notify(s, "PRICE_INCREASE", transaction: renewedTransaction(s, expires: s.expiry.addingTimeInterval(86400))) == .ignoredType)
        #expect(try await notify(s, "TEST") == .ignoredType)
        let stranger = AppStoreTestCA.transaction(
            bundleId: Self.bundleId, productId: Self.product, originalTransactionId: "9999", signedAt: s.h.clock.now, expiresAt: s.expiry.addingTimeInterval(86400))
        #expect(try await notify(s, "DID_RENEW", transaction: stranger) == .unknownTransaction)
        #expect(try await subscription(s.h, s.user.userId) == before)
        #expect(try await s.h.rows(AppStoreTransactionRow.self).count == 1)
    }

    @Test(arguments: StoreKind.testable) func aForgedNotificationIsRefusedAndChangesNothing(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let before = try await subscription(s.h, s.user.userId)
        let other = try AppStoreTestCA(name: "Other", now: s.h.clock.now)
        let refund = renewedTransaction(s, expires: s.expiry, overrides: ["revocationDate": AppStoreTestCA.ms(s.h.clock.now)])
        // Outer payload by another CA.
        let forgedOuter = other.sign(
            AppStoreTestCA.notification(type: "REFUND", bundleId: Self.bundleId, signedAt: s.h.clock.now, signedTransactionInfo: s.ca.sign(refund)))
        #expect(await identityError { try await s.h.service.handleAppStoreNotification(signedPayload: forgedOuter, productTiers: Self.products) }?.code == .appStoreUntrustedChain)
        // A genuine envelope around a forged transaction.
        let forgedInner = s.ca.sign(
            AppStoreTestCA.notification(type: "REFUND", bundleId: Self.bundleId, signedAt: s.h.clock.now, signedTransactionInfo: other.sign(refund)))
        let inner = await identityError { try await s.h.service.handleAppStoreNotification(signedPayload: forgedInner, productTiers: Self.products) }
        #expect(inner?.code == .appStoreUntrustedChain && inner?.field.hasPrefix("signedPayload.data.signedTransactionInfo") == true)
        #expect(try await subscription(s.h, s.user.userId) == before)
        let audit = try await s.h.auditRows().filter { $0.kind == "app_store_notification" }
        #expect(audit.allSatisfy { $0.outcome == "failure" && $0.actor == nil } && !audit.isEmpty)
    }

    // MARK: data rights

    @Test(arguments: StoreKind.testable) func exportShowsPurchasesAndDeletionRemovesThem(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let token = try await s.h.service.profile(accessToken: s.user.accessToken).appAccountToken
        let export = try JSONSerialization.jsonObject(with: try await s.h.service.exportData(accessToken: s.user.accessToken)) as? [String: Any]
        let purchases = try #require(export?["appStorePurchases"] as? [[String: Any]])
        #expect(purchases.first?["originalTransactionId"] as? String == "2000000000000001" && purchases.first?["productId"] as? String == Self.product)
        #expect(export?["appAccountToken"] as? String == token)
        try await s.h.service.deleteAccount(accessToken: s.user.accessToken)
        #expect(try await s.h.count("appStoreTransaction") == 0)
        #expect(try await s.h.count("appAccountToken") == 0)
        // The original transaction is free again: it no longer names anyone.
        #expect(!(try await s.h.dumpAllTables()).contains("2000000000000001"))
    }

    // MARK: the revocation ledger (issue 36: N2, N5)

    /// A REFUND notification for `original`, its transaction signed and revoked at the clock's now.
    func refundNotification(_ h: Harness, _ ca: AppStoreTestCA, original: String, type: String = "REFUND") -> String {
        let refunded = AppStoreTestCA.transaction(
            bundleId: Self.bundleId, productId: Self.product, originalTransactionId: original, transactionId: String(original.dropLast()) + "9",
            signedAt: h.clock.now, expiresAt: h.clock.now.addingTimeInterval(29 * 86400),
            overrides: ["revocationDate": AppStoreTestCA.ms(h.clock.now), "revocationReason": 1])
        return ca.sign(AppStoreTestCA.notification(type: type, bundleId: Self.bundleId, signedAt: h.clock.now, signedTransactionInfo: ca.sign(refunded)))
    }

    /// N2 (a): a REFUND that arrives before any app presented the transaction is kept (in a ledger no account owns),
    /// and the pre-refund transaction presented afterwards sets nothing.
    @Test(arguments: StoreKind.testable, ["REFUND", "REVOKE"])
    func aRefundBeforeThePurchaseIsPresentedRefusesThePreRefundTransaction(store: StoreKind, type: String) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let preRefund = transaction(h, ca, original: "4000000000000001", signedAt: now.addingTimeInterval(-86400))
        h.clock.advance(60)
        _ = try await h.service.handleAppStoreNotification(signedPayload: refundNotification(h, ca, original: "4000000000000001", type: type), productTiers: Self.products)
        let result = try await h.service.recordPurchase(accessToken: user.accessToken, signedTransaction: preRefund, productTiers: Self.products)
        #expect(result.outcome == .revoked && result.tier == nil, "\(result)")
        #expect(try await subscription(h, user.userId) == nil)
    }

    /// N2 (b): a refund ended the tier, the account was deleted, and a new account presents the pre-refund
    /// transaction: it sets nothing.
    @Test(arguments: StoreKind.testable) func aRefundSurvivesTheAccountsDeletion(store: StoreKind) async throws {
        let s = try await subscribed(store)
        #expect(try await s.h.service.handleAppStoreNotification(signedPayload: refundNotification(s.h, s.ca, original: "2000000000000001"), productTiers: Self.products) == .ended)
        try await s.h.service.deleteAccount(accessToken: s.user.accessToken)
        let next = try await s.h.service.signInAnonymously(source: .inProcess)
        let preRefund = transaction(s.h, s.ca, signedAt: TestClock().now.addingTimeInterval(-86400))
        let result = try await s.h.service.recordPurchase(accessToken: next.accessToken, signedTransaction: preRefund, productTiers: Self.products)
        #expect(result.outcome != .applied && result.tier == nil, "\(result)")
        #expect(try await subscription(s.h, next.userId) == nil)
    }

    /// N2: deleting an account keeps a tombstone per original transaction it owned (no user, the dates): a later
    /// claim of the same transaction changes nothing, a newer one of the same original is applied; nothing left
    /// names the deleted person or the original transaction in clear.
    @Test(arguments: StoreKind.testable) func aDeletedAccountsPurchaseMeetsTheSameChecksWhenClaimedAgain(store: StoreKind) async throws {
        let s = try await subscribed(store)
        try await s.h.service.deleteAccount(accessToken: s.user.accessToken)
        let next = try await s.h.service.signInAnonymously(source: .inProcess)
        let same = transaction(s.h, s.ca, signedAt: TestClock().now.addingTimeInterval(-86400))
        let replay = try await s.h.service.recordPurchase(accessToken: next.accessToken, signedTransaction: same, productTiers: Self.products)
        #expect(replay.outcome != .applied && replay.tier == nil, "\(replay)")
        #expect(try await subscription(s.h, next.userId) == nil)
        s.h.clock.advance(60)
        let newer = transaction(s.h, s.ca, id: "2000000000000002")
        #expect(try await s.h.service.recordPurchase(accessToken: next.accessToken, signedTransaction: newer, productTiers: Self.products).outcome == .applied)
        try await s.h.service.deleteAccount(accessToken: next.accessToken)
        let dump = try await s.h.dumpAllTables()
        #expect(!dump.contains(s.user.userId) && !dump.contains(next.userId) && !dump.contains("2000000000000001"))
    }

    /// N5: a verified transaction carrying a revocationDate, presented by the owner's app, ends the entitlement it
    /// granted (the only refund signal a deployment without notifications gets); the pre-refund one then sets nothing.
    @Test(arguments: StoreKind.testable) func aRevokedTransactionFromTheOwnersAppEndsTheTierItGranted(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let revoked = transaction(s.h, s.ca, id: "2000000000000005", overrides: ["revocationDate": AppStoreTestCA.ms(s.h.clock.now), "revocationReason": 0])
        let result = try await s.h.service.recordPurchase(accessToken: s.user.accessToken, signedTransaction: revoked, productTiers: Self.products)
        #expect(result.outcome == .revoked && result.tier == nil, "\(result)")
        #expect(try await subscription(s.h, s.user.userId) == nil)
        let preRefund = transaction(s.h, s.ca, signedAt: TestClock().now.addingTimeInterval(-86400))
        #expect(try await s.h.service.recordPurchase(accessToken: s.user.accessToken, signedTransaction: preRefund, productTiers: Self.products).tier == nil)
        #expect(try await subscription(s.h, s.user.userId) == nil)
    }

    /// N2: a verified revoked transaction presented by an account that never owned the original still enters the
    /// ledger: the pre-revocation transaction presented later by anyone sets nothing.
    @Test(arguments: StoreKind.testable) func aRevokedTransactionPresentedByAnyoneEntersTheLedger(store: StoreKind) async throws {
        let now = TestClock().now
        let ca = try AppStoreTestCA(now: now)
        let h = try await harness(store, ca)
        let (alice, bob) = (try await h.service.signInAnonymously(source: .inProcess), try await h.service.signInAnonymously(source: .inProcess))
        let preRefund = transaction(h, ca, original: "5000000000000001", signedAt: now.addingTimeInterval(-86400))
        let revoked = transaction(h, ca, original: "5000000000000001", id: "5000000000000002", overrides: ["revocationDate": AppStoreTestCA.ms(now)])
        #expect(try await h.service.recordPurchase(accessToken: bob.accessToken, signedTransaction: revoked, productTiers: Self.products).outcome == .revoked)
        let result = try await h.service.recordPurchase(accessToken: alice.accessToken, signedTransaction: preRefund, productTiers: Self.products)
        #expect(result.outcome == .revoked && result.tier == nil, "\(result)")
    }

    // MARK: notification replays (issue 36: N4)

    /// A notification of `type` around `transaction`, signed by the test CA at `signedAt` (the clock's now by default).
    func signedNotification(_ s: Subscribed, _ type: String, subtype: String? = nil, transaction: [String: Any], signedAt: Date? = nil) -> String {
        s.ca.sign(
            AppStoreTestCA.notification(
                type: type, subtype: subtype, bundleId: Self.bundleId, signedAt: signedAt ?? s.h.clock.now, signedTransactionInfo: s.ca.sign(transaction)))
    }

    /// N4: the same notification delivered again (Apple retries; anyone who saw it can replay it) is applied once and
    /// writes one full audit row, not one per copy.
    @Test(arguments: StoreKind.testable) func aReplayedNotificationIsAppliedOnceAndAuditedOnce(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let payload = signedNotification(s, "DID_RENEW", transaction: renewedTransaction(s, expires: s.expiry.addingTimeInterval(30 * 86400)))
        #expect(try await s.h.service.handleAppStoreNotification(signedPayload: payload, productTiers: Self.products) == .applied)
        for _ in 0..<20 {
            s.h.clock.advance(1)
            #expect(try await s.h.service.handleAppStoreNotification(signedPayload: payload, productTiers: Self.products) != .applied)
        }
        let audit = try await s.h.auditRows().filter { $0.kind == "app_store_notification" }
        #expect(audit.count <= 2, "\(audit.map(\.reason))")
    }

    /// N4: a second notification carrying a transaction no newer than the one applied (an equal signedDate) changes nothing.
    @Test(arguments: StoreKind.testable) func aNotificationNeedsAStrictlyNewerTransaction(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let renewed = renewedTransaction(s, expires: s.expiry.addingTimeInterval(30 * 86400))
        #expect(try await s.h.service.handleAppStoreNotification(signedPayload: signedNotification(s, "DID_RENEW", transaction: renewed), productTiers: Self.products) == .applied)
        var expired = renewed
        expired["expiresDate"] = AppStoreTestCA.ms(s.h.clock.now.addingTimeInterval(-60))
        let outcome = try await s.h.service.handleAppStoreNotification(
            signedPayload: signedNotification(s, "EXPIRED", subtype: "VOLUNTARY", transaction: expired), productTiers: Self.products)
        #expect(outcome == .stale)
        #expect(try await subscription(s.h, s.user.userId)?.expiresAt == s.expiry.addingTimeInterval(30 * 86400))
    }

    /// N4: an EXPIRED of one original transaction does not end a tier another, current purchase granted.
    @Test(arguments: StoreKind.testable) func aNotificationTouchesOnlyItsOwnOriginalTransactionsSubscription(store: StoreKind) async throws {
        let s = try await subscribed(store)
        s.h.clock.advance(60)
        let team = transaction(s.h, s.ca, original: "3000000000000001", product: "com.example.team.monthly")
        #expect(try await s.h.service.recordPurchase(accessToken: s.user.accessToken, signedTransaction: team, productTiers: Self.products).tier == "team")
        s.h.clock.advance(60)
        let ended = renewedTransaction(s, expires: s.h.clock.now.addingTimeInterval(-1))
        _ = try await s.h.service.handleAppStoreNotification(
            signedPayload: signedNotification(s, "EXPIRED", subtype: "VOLUNTARY", transaction: ended), productTiers: Self.products)
        let sub = try await subscription(s.h, s.user.userId)
        #expect(sub?.tier == "team" && sub?.originalTransactionId == "3000000000000001")
    }

    /// N4: a notification signed longer ago than Apple retries for (its id may no longer be remembered) changes nothing.
    @Test(arguments: StoreKind.testable) func aNotificationOlderThanTheRetryWindowChangesNothing(store: StoreKind) async throws {
        let s = try await subscribed(store)
        let before = try await subscription(s.h, s.user.userId)
        let renewed = renewedTransaction(s, expires: s.expiry.addingTimeInterval(30 * 86400))
        let old = signedNotification(s, "DID_RENEW", transaction: renewed, signedAt: s.h.clock.now.addingTimeInterval(-30 * 86400))
        #expect(try await s.h.service.handleAppStoreNotification(signedPayload: old, productTiers: Self.products) != .applied)
        #expect(try await subscription(s.h, s.user.userId) == before)
    }
}
