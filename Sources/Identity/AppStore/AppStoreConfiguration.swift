import Foundation
import X509

/// The App Store environment a signed transaction or notification names (`environment`).
public enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable {
    /// Real purchases.
    case production = "Production"
    /// TestFlight and sandbox testers.
    case sandbox = "Sandbox"
    /// StoreKit testing in Xcode.
    case xcode = "Xcode"
}

/// What an App Store signed transaction or notification must satisfy to change a tier.
///
/// Purchases are off until at least one bundle id is set: the purchase and notification routes then
/// answer `purchases_not_configured`.
public struct AppStoreConfiguration: Sendable {
    /// The app's bundle ids: a payload's `bundleId` must be one of them.
    public var bundleIds: Set<String> = []
    /// The environments accepted; Production only by default.
    public var environments: Set<AppStoreEnvironment> = [.production]
    /// Roots trusted besides the shipped Apple Root CA - G3 (DER), for Apple's future roots and for tests.
    public private(set) var additionalRoots: [Data] = []

    /// No bundle id, Production only, Apple Root CA - G3 alone.
    public init() {}

    /// Whether purchases are accepted at all (a bundle id is configured).
    public var isConfigured: Bool { !bundleIds.isEmpty }

    /// Trusts one more root certificate, given as DER or PEM (`-----BEGIN CERTIFICATE-----`). Throws
    /// `invalid_input` naming `field` when the bytes are not one certificate.
    public mutating func addRootCertificate(_ bytes: Data, field: String = "appStore.rootCertificate") throws(IdentityError) {
        let certificate: Certificate
        if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            guard let parsed = try? Certificate(pemEncoded: text) else { throw .invalid(field, "is not a PEM certificate") }
            certificate = parsed
        } else {
            guard let parsed = try? Certificate(derEncoded: Array(bytes)) else { throw .invalid(field, "is not a DER or PEM certificate") }
            certificate = parsed
        }
        guard let der = try? certificate.serializeAsPEM().derBytes else { throw .invalid(field, "cannot be re-encoded") }
        additionalRoots.append(Data(der))
    }

    /// The trusted roots: Apple Root CA - G3 (when its fingerprint matches the pin) and the added ones.
    var trustedRoots: [Certificate] {
        var roots: [Certificate] = []
        if let apple = AppleRootCertificate.certificate { roots.append(apple) }
        for der in additionalRoots {
            if let root = try? Certificate(derEncoded: Array(der)) { roots.append(root) }
        }
        return roots
    }
}
