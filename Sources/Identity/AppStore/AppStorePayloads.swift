import Foundation
import PolicyModel

/// The claims of a StoreKit 2 signed transaction (`JWSTransactionDecodedPayload`) that a tier depends on.
/// Dates are milliseconds since 1970, as Apple sends them.
package struct AppStoreTransaction: Decodable, Sendable, Hashable {
    package var transactionId: String
    package var originalTransactionId: String
    package var bundleId: String
    package var productId: String
    package var environment: String
    package var signedDate: Double
    package var expiresDate: Double?
    package var revocationDate: Double?
    package var appAccountToken: String?

    package var signedAt: Date { Date(millisecondsSince1970: signedDate) }
    /// `signedDate` in whole milliseconds, for ordering transactions exactly.
    package var signedMilliseconds: Int64 { Int64(signedDate.rounded()) }
    package var expiresAt: Date? { expiresDate.map(Date.init(millisecondsSince1970:)) }
    package var revokedAt: Date? { revocationDate.map(Date.init(millisecondsSince1970:)) }
}

/// The claims of a signed renewal info (`JWSRenewalInfoDecodedPayload`) that a grace period needs.
package struct AppStoreRenewalInfo: Decodable, Sendable, Hashable {
    package var originalTransactionId: String
    package var environment: String
    package var signedDate: Double
    package var gracePeriodExpiresDate: Double?
    package var autoRenewStatus: Int?

    package var gracePeriodEndsAt: Date? { gracePeriodExpiresDate.map(Date.init(millisecondsSince1970:)) }
}

/// An App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
package struct AppStoreNotificationPayload: Decodable, Sendable, Hashable {
    package struct NotificationData: Decodable, Sendable, Hashable {
        package var bundleId: String
        package var environment: String
        package var signedTransactionInfo: String?
        package var signedRenewalInfo: String?
    }
    package var notificationType: String
    package var subtype: String?
    package var notificationUUID: String
    package var signedDate: Double
    /// Absent for notifications about a summary or an external purchase token: those change no tier here.
    package var data: NotificationData?
}

/// The notification types that change a tier; every other type is answered 200 and changes nothing. Apple's names
/// are the case names in screaming snake case (`DID_RENEW`).
public enum AppStoreNotificationType: CaseIterable, SpelledCases, Sendable {
    package static let spelling = CaseSpelling.screamingSnake

    /// The tier runs to the transaction's `expiresDate`: a renewal (the new date), an expiry (the tier ends at it),
    /// auto-renew turned on or off.
    case didRenew, expired, didChangeRenewalStatus
    /// A renewal failed: the tier runs to the grace period's end when there is one, else to `expiresDate`.
    case didFailToRenew
    /// Apple refunded the transaction, or Family Sharing access was revoked: the tier it granted ends.
    case refund, revoke
}

extension Date {
    init(millisecondsSince1970 ms: Double) { self.init(timeIntervalSince1970: ms / 1000) }
}
