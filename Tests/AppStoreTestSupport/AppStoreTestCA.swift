import Crypto
import Foundation
import SwiftASN1
import X509

/// Apple's side of App Store signed data, played by a certificate authority the test makes: a root,
/// an intermediate with Apple's WWDR marker extension and a leaf with the receipt-signing marker,
/// P-256 keys throughout. Configure `rootDER` as an extra App Store root (the same code path as Apple's
/// future roots) and sign payloads with `sign`.
public struct AppStoreTestCA: Sendable {
    public static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    public static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: P256.Signing.PrivateKey

    /// The root's DER, as `--app-store-root-certificate` reads it.
    public var rootDER: Data { Data(Self.der(root)) }
    /// The root's PEM text.
    public var rootPEM: String { (try? root.serializeAsPEM().pemString) ?? "" }

    /// A fresh chain valid for ten years around `now`; the leaf's validity, and whether each marker is
    /// present, may be changed to make the chains a verifier must refuse.
    public init(
        name: String = "Test", now: Date, leafNotBefore: Date? = nil, leafNotAfter: Date? = nil, leafMarker: Bool = true,
        intermediateMarker: Bool = true
    ) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        leafKey = P256.Signing.PrivateKey()
        let (start, end) = (now.addingTimeInterval(-10 * 365 * 86400), now.addingTimeInterval(10 * 365 * 86400))
        let rootName = try DistinguishedName { CommonName("\(name) Root CA - G3"); OrganizationName("\(name)") }
        let intermediateName = try DistinguishedName { CommonName("\(name) Worldwide Developer Relations CA"); OrganizationName("\(name)") }
        let leafName = try DistinguishedName { CommonName("\(name) App Store Receipt Signing"); OrganizationName("\(name)") }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: start, notValidAfter: end,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: start, notValidAfter: end,
            issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if intermediateMarker { Certificate.Extension(oid: Self.intermediateMarker, critical: false, value: [0x05, 0x00]) }
            }, issuerPrivateKey: .init(rootKey))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: leafNotBefore ?? now.addingTimeInterval(-365 * 86400), notValidAfter: leafNotAfter ?? now.addingTimeInterval(365 * 86400),
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if leafMarker { Certificate.Extension(oid: Self.leafMarker, critical: false, value: [0x05, 0x00]) }
            }, issuerPrivateKey: .init(intermediateKey))
    }

    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A compact JWS of `payload` signed ES256 by the leaf, with the chain in `x5c`; `header` entries
    /// replace (or with NSNull remove) those of the header.
    public func sign(_ payload: [String: Any], header: [String: Any] = [:]) -> String {
        var h: [String: Any] = [
            "alg": "ES256",
            "x5c": [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() },
        ]
        for (k, v) in header { h[k] = v is NSNull ? nil : v }
        let input = Self.base64URL(try! JSONSerialization.data(withJSONObject: h, options: [.sortedKeys])) + "."
            + Self.base64URL(try! JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
        let signature = try! leafKey.signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// Milliseconds since 1970, as Apple writes dates.
    public static func ms(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) }

    /// A signed transaction's claims (`JWSTransactionDecodedPayload`); `overrides` replace (or with NSNull remove) claims.
    public static func transaction(
        bundleId: String, productId: String, originalTransactionId: String = "2000000000000001", transactionId: String? = nil,
        signedAt: Date, expiresAt: Date?, environment: String = "Production", appAccountToken: String? = nil, overrides: [String: Any] = [:]
    ) -> [String: Any] {
        var c: [String: Any] = [
            "transactionId": transactionId ?? originalTransactionId, "originalTransactionId": originalTransactionId, "bundleId": bundleId,
            "productId": productId, "purchaseDate": ms(signedAt), "originalPurchaseDate": ms(signedAt), "quantity": 1,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": ms(signedAt), "environment": environment,
            "storefront": "USA", "storefrontId": "143441", "transactionReason": "PURCHASE",
        ]
        if let expiresAt { c["expiresDate"] = ms(expiresAt) }
        if let appAccountToken { c["appAccountToken"] = appAccountToken }
        for (k, v) in overrides { c[k] = v is NSNull ? nil : v }
        return c
    }

    /// An App Store Server Notification V2's claims around a signed transaction (and renewal info).
    public static func notification(
        type: String, subtype: String? = nil, bundleId: String, environment: String = "Production", signedAt: Date, signedTransactionInfo: String?,
        signedRenewalInfo: String? = nil
    ) -> [String: Any] {
        var data: [String: Any] = ["bundleId": bundleId, "environment": environment, "appAppleId": 1234567890, "bundleVersion": "1", "status": 1]
        if let signedTransactionInfo { data["signedTransactionInfo"] = signedTransactionInfo }
        if let signedRenewalInfo { data["signedRenewalInfo"] = signedRenewalInfo }
        var c: [String: Any] = [
            "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0", "signedDate": ms(signedAt), "data": data,
        ]
        if let subtype { c["subtype"] = subtype }
        return c
    }
}
