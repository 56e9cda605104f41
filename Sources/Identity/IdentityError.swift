import Foundation
import PolicyModel

/// A refusal or failure from the identity layer, naming the input field at fault.
///
/// `reason` is fixed text chosen by the code that throws; it never echoes a submitted value,
/// so an error can be logged or shown without leaking a PIN, token or nonce.
public struct IdentityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal or failure it is; the raw value, the case name in snake case, is the wire form
    /// (`invalid_input`, `app_store_algorithm_not_es256`).
    public enum Code: CaseIterable, SpelledCases, Sendable {
        package static let spelling = CaseSpelling.snake

        /// The input is malformed (wrong length, characters, shape).
        case invalidInput
        /// The token is unknown, expired or revoked; the caller is signed out.
        case unauthenticated
        /// A PIN, signature or share code did not match.
        case invalidCredentials
        /// Too many recent failures: try again after `retryAfter` seconds.
        case throttled
        /// Locked until a stronger verification resets it.
        case locked
        /// A Sign in with Apple identity token failed verification.
        case tokenRejected
        /// The account, session, Apple id or space it names does not exist.
        case notFound
        /// The change collides with the account's state (an Apple id linked already, a PIN set already).
        case conflict
        /// The session is valid but not allowed to do this.
        case forbidden
        /// The database failed; the transaction was rolled back.
        case storage
        /// App Store purchases are not configured on this server (no bundle id).
        case purchasesNotConfigured
        /// An App Store signed value is not a compact JWS of the expected shape and claims.
        case invalidSignedTransaction
        /// The JWS header's `alg` is not ES256.
        case appStoreAlgorithmNotES256
        /// The ES256 signature does not verify under the leaf certificate's key (forged or edited).
        case appStoreSignatureInvalid
        /// The `x5c` chain does not reach a trusted root (Apple Root CA - G3 or a configured one).
        case appStoreUntrustedChain
        /// The leaf or intermediate lacks Apple's marker extension.
        case appStoreMarkerMissing
        /// A certificate of the chain is not valid at the payload's `signedDate`.
        case appStoreCertificateExpired
        /// The payload's `bundleId` is not a configured bundle id.
        case appStoreWrongBundle
        /// The payload's `environment` is not an accepted one.
        case appStoreEnvironmentNotAllowed
        /// The transaction's `appAccountToken` is not the account's own.
        case appAccountMismatch
        /// The transaction's `originalTransactionId` belongs to another account.
        case purchaseOwnedElsewhere
        /// The product is not one the served policy maps to a tier.
        case unknownProduct
        /// The database did not answer within its deadline (stopped, unreachable, a lock held, a pool with no
        /// free connection); nothing was decided or changed. Try again after `retryAfter` seconds.
        case storageUnavailable
        /// The policy's plan for a list reads something the store cannot query (a condition with no SQL form);
        /// `field` names it. Nothing is wrong with the request: `decide` still answers for each resource.
        case notListable
    }

    /// What kind of refusal it is.
    public var code: Code
    /// The input field at fault, as a dotted path (`identityToken.aud`, `pin`).
    public var field: String
    /// Fixed text saying what is wrong with `field`; never a submitted value.
    public var reason: String
    /// Seconds until another attempt is accepted, for `throttled` and `storageUnavailable`.
    public var retryAfter: TimeInterval?

    /// An error of `code` about `field`; `reason` must be fixed text, never a submitted value.
    public init(_ code: Code, field: String, _ reason: String, retryAfter: TimeInterval? = nil) {
        self.code = code
        self.field = field
        self.reason = reason
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(code.rawValue): \(field): \(reason)"
        if let retryAfter { text += " (retry after \(Int(retryAfter.rounded(.up))) s)" }
        return text
    }

    static func invalid(_ field: String, _ reason: String) -> IdentityError { .init(.invalidInput, field: field, reason) }
    static func rejected(_ field: String, _ reason: String) -> IdentityError { .init(.tokenRejected, field: field, reason) }
    static let signedOut = IdentityError(.unauthenticated, field: "accessToken", "unknown, expired or revoked session")

    /// The database missed a deadline; `why` is fixed text (which deadline), never a statement or value.
    package static func unavailable(_ why: String, retryAfter: TimeInterval = 2) -> IdentityError {
        IdentityError(.storageUnavailable, field: "database", why, retryAfter: retryAfter)
    }
}
