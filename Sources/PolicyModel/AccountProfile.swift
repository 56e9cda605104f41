import Foundation

/// What the signed-in user may see of their own account (`GET /v1/me`): no secret, hash or key material. The server
/// builds it from the store and the client from the response, so both hold this one type.
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
    public var appAccountToken: String

    /// A profile with every field given.
    public init(
        userId: String, username: String?, displayName: String?, email: String?, isPrivateRelayEmail: Bool, appleUserIds: [String],
        hasPIN: Bool, deviceIds: [String], appRoles: [String], tier: String?, subscriptionExpiresAt: Date?, appAccountToken: String
    ) {
        self.userId = userId
        self.username = username
        self.displayName = displayName
        self.email = email
        self.isPrivateRelayEmail = isPrivateRelayEmail
        self.appleUserIds = appleUserIds
        self.hasPIN = hasPIN
        self.deviceIds = deviceIds
        self.appRoles = appRoles
        self.tier = tier
        self.subscriptionExpiresAt = subscriptionExpiresAt
        self.appAccountToken = appAccountToken
    }
}
