import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies App Store signed data (StoreKit 2 `jwsRepresentation`, App Store Server Notifications V2
/// and the JWS they carry) as Apple's App Store Server Library does offline:
///
/// 1. a compact JWS whose header says `alg` ES256 and carries an `x5c` chain of three certificates;
/// 2. the ES256 signature verifies under the leaf's P-256 key;
/// 3. the chain leaf, intermediate (`x5c[1]`) reaches a trusted root (Apple Root CA - G3 pinned by its
///    fingerprint, or a configured one), every certificate valid at the payload's `signedDate`
///    (RFC 5280 checks by swift-certificates), the leaf carrying Apple's receipt-signing marker
///    extension and the intermediate Apple's WWDR marker.
///
/// Only then are the payload's claims decoded. Each refusal has its own `IdentityError` code.
package struct AppStoreSignedDataVerifier: Sendable {
    /// Apple's marker extension on the leaf (Mac App Store and iTunes Store receipt signing).
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Apple's marker extension on the intermediate (Apple Worldwide Developer Relations CA).
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// The longest signed value accepted (a notification carries two nested JWS).
    static let maxLength = 128 * 1024
    /// The latest `signedDate` a chain can be checked at: 9999-12-31T23:59:59.999Z, in milliseconds since 1970.
    static let latestSignedDate = 253_402_300_799_999.0

    let roots: [Certificate]

    package init(configuration: AppStoreConfiguration) {
        roots = configuration.trustedRoots
    }

    /// The header fields read; any other is ignored, as Apple's library does.
    private struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
        var crit: [String]?
    }

    /// Only the signing time, read (from a signature that verified) to date the chain check.
    private struct Signed: Decodable {
        var signedDate: Double?
    }

    /// The decoded payload of `jws`, once its signature and chain hold; `field` names the value in errors.
    package func verify<Payload: Decodable>(_ jws: String, as type: Payload.Type, field: String) async throws(IdentityError) -> Payload {
        guard jws.utf8.count <= Self.maxLength else { throw Self.malformed(field, "is too long") }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.malformed(field, "is not a compact JWS") }
        guard let headerData = SecretCoding.fromBase64URL(parts[0]), let payloadData = SecretCoding.fromBase64URL(parts[1]),
            let signatureData = SecretCoding.fromBase64URL(parts[2])
        else { throw Self.malformed(field, "is not base64url") }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData) else {
            throw Self.malformed(field + ".header", "is not a JOSE header")
        }
        // Pinned: ES256 and nothing else (no `none`, no HMAC keyed with a public key).
        guard header.alg == "ES256" else { throw IdentityError(.appStoreAlgorithmNotES256, field: field + ".alg", "must be ES256") }
        guard header.crit == nil else { throw Self.malformed(field + ".crit", "critical header parameters are not accepted") }
        guard let x5c = header.x5c, x5c.count == 3 else {
            throw IdentityError(.appStoreUntrustedChain, field: field + ".x5c", "must hold three certificates: leaf, intermediate, root")
        }
        var chain: [Certificate] = []
        for (i, text) in x5c.enumerated() {
            guard let der = Data(base64Encoded: text), let certificate = try? Certificate(derEncoded: Array(der)) else {
                throw Self.malformed(field + ".x5c[\(i)]", "is not a base64 DER certificate")
            }
            chain.append(certificate)
        }
        let (leaf, intermediate) = (chain[0], chain[1])
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else {
            throw IdentityError(.appStoreUntrustedChain, field: field + ".x5c[0]", "the leaf's key is not P-256")
        }
        let signingInput = Data(jws.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: signingInput)
        else { throw IdentityError(.appStoreSignatureInvalid, field: field + ".signature", "does not verify under the leaf's key") }

        guard let signed = try? JSONDecoder().decode(Signed.self, from: payloadData), let ms = signed.signedDate, ms.isFinite, ms > 0 else {
            throw Self.malformed(field + ".signedDate", "is required (milliseconds since 1970)")
        }
        // The leaf is not trusted yet (the chain check comes next, dated at this time), and swift-certificates traps on
        // a validation time after the year 9999 (its GeneralizedTime): refused here, whoever signed it.
        guard ms <= Self.latestSignedDate else { throw Self.malformed(field + ".signedDate", "is after the year 9999") }
        try await verifyChain(leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: ms / 1000), field: field)

        do {
            return try JSONDecoder().decode(Payload.self, from: payloadData)
        } catch {
            throw Self.malformed(field + ".payload", Self.describe(error))
        }
    }

    /// Throws unless leaf -> `intermediate` -> a trusted root holds at `signedAt` under RFC 5280 and Apple's
    /// marker rule.
    package func verifyChain(leaf: Certificate, intermediate: Certificate, at signedAt: Date, field: String) async throws(IdentityError) {
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: signedAt)
            AppStoreMarkerPolicy()
        }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate])) {
        case .validCertificate: return
        case .couldNotValidate: throw Self.chainRefusal(leaf: leaf, intermediate: intermediate, at: signedAt, field: field)
        }
    }

    /// Which check a chain failed, for its error code: a missing marker, a certificate outside its
    /// validity at `signedAt`, else no path to a trusted root. (The chain is refused either way.)
    private static func chainRefusal(leaf: Certificate, intermediate: Certificate, at signedAt: Date, field: String) -> IdentityError {
        if leaf.extensions[oid: leafMarker] == nil {
            return IdentityError(.appStoreMarkerMissing, field: field + ".x5c[0]", "the leaf lacks Apple's receipt-signing marker extension")
        }
        if intermediate.extensions[oid: intermediateMarker] == nil {
            return IdentityError(.appStoreMarkerMissing, field: field + ".x5c[1]", "the intermediate lacks Apple's WWDR marker extension")
        }
        for (i, c) in [leaf, intermediate].enumerated() where signedAt < c.notValidBefore || signedAt > c.notValidAfter {
            return IdentityError(.appStoreCertificateExpired, field: field + ".x5c[\(i)]", "is not valid at the payload's signedDate")
        }
        return IdentityError(.appStoreUntrustedChain, field: field + ".x5c", "does not chain to a trusted root")
    }

    static func malformed(_ field: String, _ reason: String) -> IdentityError {
        IdentityError(.invalidSignedTransaction, field: field, reason)
    }

    /// A decoding error as fixed text naming the claim (never a value).
    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: "the claim '\(key.stringValue)' is required"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            "the claim '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        default: "is not a JSON object of the expected claims"
        }
    }
}

/// Apple's App Store chain rule: exactly leaf, intermediate, root, the leaf with the receipt-signing
/// marker and the intermediate with the WWDR marker (as Apple's library requires).
struct AppStoreMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else { return .failsToMeetPolicy(reason: "the chain must be leaf, intermediate, root") }
        guard chain[0].extensions[oid: AppStoreSignedDataVerifier.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks Apple's receipt-signing marker extension")
        }
        guard chain[1].extensions[oid: AppStoreSignedDataVerifier.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks Apple's WWDR marker extension")
        }
        return .meetsPolicy
    }
}
