import AppStoreTestSupport
import Crypto
import Foundation
import FuzzSupport
import Identity
import SwiftASN1
import X509

/// libFuzzer entry for the App Store JWS reader (`AppStoreSignedDataVerifier.verify`), with a test root trusted. The
/// first byte picks a mode:
/// - plain (0): the rest is the JWS text.
/// - honest (1): the bytes choose claims (each right or replaced by a chosen string or number), which the test CA's
///   leaf signs with the right header: it must be accepted with exactly those claims whenever its claims decode and
///   its `signedDate` lies in the chain's validity, and otherwise refused naming a field.
/// - forged (2): a token is signed, then changed (payload swapped after signing, signature bytes flipped, header
///   changed, signed by an untrusted CA's leaf with either chain, `alg` none or HS256): it must be refused.
/// In every mode a trap or hang is a finding, and so is any accepted token whose signature does not verify under the
/// trusted CA's leaf key over its own signing input (a forgery that reached the claims).
public func fuzzAppStoreJWS(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    switch input.byte() % 3 {
    case 0: check(String(decoding: input.rest(), as: UTF8.self), mustAccept: nil)
    case 1: honest(&input)
    default: forged(&input)
    }
}

enum Fixture {
    static let now = Date(timeIntervalSince1970: 1_795_348_800)
    static let ca = try! AppStoreTestCA(name: "Fuzz", now: now)
    static let untrusted = try! AppStoreTestCA(name: "Other", now: now)
    static let verifier: AppStoreSignedDataVerifier = {
        var configuration = AppStoreConfiguration()
        configuration.bundleIds = ["com.example.app"]
        try! configuration.addRootCertificate(ca.rootDER)
        return AppStoreSignedDataVerifier(configuration: configuration)
    }()
    static func claims(signedAt: Date = now) -> [String: Any] {
        AppStoreTestCA.transaction(bundleId: "com.example.app", productId: "pro.monthly", signedAt: signedAt, expiresAt: signedAt + 30 * 86_400)
    }

    // Made once, not per input (signing, the chain's DER and its base64 were most of the target's own cost). The CA's
    // keys are new in every process, so a token was never the same from one run to the next anyway.
    /// The header segment `ca.sign` writes (`alg` ES256 and the CA's `x5c` chain): honest tokens are this, a payload and
    /// the leaf's signature over both, byte for byte what `ca.sign(claims)` makes.
    static let header = String(ca.sign([:]).split(separator: ".")[0])
    /// The honest token forged mode changes, and one signed by the untrusted CA's leaf.
    static let honestToken = ca.sign(claims())
    static let untrustedToken = untrusted.sign(claims())
    /// The trusted chain's certificates in base64 DER, leaf first (for headers forged mode writes).
    static let chain: [String] = [ca.leaf, ca.intermediate, ca.root].map { certificate in
        var serializer = DER.Serializer()
        try? serializer.serialize(certificate)
        return Data(serializer.serializedBytes).base64EncodedString()
    }

    /// `ca.sign(claims)`, with the header made once.
    static func sign(_ claims: [String: Any]) -> String {
        let input = header + "." + base64URL(try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let signature = try! ca.leafKey.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }
}

func base64URL(_ bytes: some Sequence<UInt8>) -> String {
    // Byte by byte (Foundation's replacingOccurrences, three times over, cost as much as the verifier's chain check).
    var out: [UInt8] = []
    for byte in Data(bytes).base64EncodedString().utf8 where byte != UInt8(ascii: "=") {
        out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: "-") : byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte)
    }
    return String(decoding: out, as: UTF8.self)
}

func fromBase64URL(_ text: Substring) -> Data? {
    var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while s.count % 4 != 0 { s += "=" }
    return Data(base64Encoded: s)
}

/// Verifies `jws`; `mustAccept` true or false is what an honest or forged token must get. Any acceptance must carry a
/// signature that verifies under the trusted leaf's key.
@discardableResult
func check(_ jws: String, mustAccept: Bool?) -> AppStoreTransaction? {
    let result = awaitResult { () -> Result<AppStoreTransaction, IdentityError> in
        do throws(IdentityError) { return .success(try await Fixture.verifier.verify(jws, as: AppStoreTransaction.self, field: "signedTransaction")) } catch {
            return .failure(error)
        }
    }
    switch result {
    case .success(let transaction):
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = fromBase64URL(parts[2]), let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            Fixture.ca.leafKey.publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else { finding("an App Store JWS was accepted without a signature by the trusted leaf: \(jws)") }
        if mustAccept == false { finding("a forged App Store JWS was accepted: \(jws)") }
        return transaction
    case .failure(let error):
        if mustAccept == true { finding("an honest App Store JWS was refused (\(error.code), \(error.field): \(error.reason)): \(jws)") }
        if error.field.isEmpty || error.reason.isEmpty { finding("a refusal without a field or reason") }
        return nil
    }
}

func honest(_ input: inout FuzzInput) {
    let signedAt = Fixture.now + Double(Int(input.byte()) - 128) * 86_400 * 30  // about ten years either side
    var claims = Fixture.claims(signedAt: signedAt)
    var claimsDecode = true
    for _ in 0..<input.below(4) {
        let key = input.pick(["transactionId", "originalTransactionId", "bundleId", "productId", "environment", "signedDate", "expiresDate",
                              "revocationDate", "appAccountToken", "quantity", "extra"])
        let text = input.string(max: 40)
        let number = Double(Int64(bitPattern: input.uint64())) / 1000
        switch input.below(4) {
        case 0: claims[key] = text
        case 1: claims[key] = number.isFinite ? number : 0
        case 2: claims[key] = NSNull()
        default: claims[key] = nil
        }
    }
    // Which claims decode into AppStoreTransaction (the verifier's own check is the signature and chain first).
    let strings = ["transactionId", "originalTransactionId", "bundleId", "productId", "environment"]
    for key in strings where !(claims[key] is String) { claimsDecode = false }
    for key in ["expiresDate", "revocationDate"] where claims[key] != nil && !(claims[key] is NSNull) && !(claims[key] is Double || claims[key] is Int) {
        claimsDecode = false
    }
    if let token = claims["appAccountToken"], !(token is String || token is NSNull) { claimsDecode = false }
    let date: Double? = (claims["signedDate"] as? Double) ?? (claims["signedDate"] as? Int).map(Double.init)
    let inValidity = date.map { ms in
        let at = Date(timeIntervalSince1970: ms / 1000)
        return ms.isFinite && ms > 0 && at >= Fixture.ca.leaf.notValidBefore && at <= Fixture.ca.leaf.notValidAfter
            && at >= Fixture.ca.intermediate.notValidBefore && at <= Fixture.ca.intermediate.notValidAfter
            && at >= Fixture.ca.root.notValidBefore && at <= Fixture.ca.root.notValidAfter
    } ?? false
    let jws = Fixture.sign(claims)
    // Near a validity edge, millisecond rounding decides: no expectation there.
    let expectation: Bool? = claimsDecode && inValidity ? true : (date == nil || !claimsDecode ? false : nil)
    guard let transaction = check(jws, mustAccept: expectation) else { return }
    if transaction.bundleId != claims["bundleId"] as? String || transaction.transactionId != claims["transactionId"] as? String {
        finding("an accepted JWS read other claims than were signed")
    }
}

func forged(_ input: inout FuzzInput) {
    let honest = Fixture.honestToken
    let parts = honest.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    var forged: String
    switch input.below(6) {
    case 0:  // another payload under the honest signature
        var claims = Fixture.claims()
        claims[input.pick(["productId", "bundleId", "expiresDate", "transactionId"])] = input.string(max: 40)
        let payload = base64URL(try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        forged = parts[0] + "." + payload + "." + parts[2]
    case 1:  // signature bytes changed
        var signature = Array(fromBase64URL(Substring(parts[2])) ?? Data())
        for _ in 0...input.below(3) where !signature.isEmpty {
            let at = input.below(signature.count)
            let flip = max(1, input.byte())
            signature[at] ^= flip
        }
        forged = parts[0] + "." + parts[1] + "." + base64URL(signature)
    case 2:  // signed by an untrusted CA's leaf, with its own chain or the trusted one
        let other = Fixture.untrustedToken
        let otherParts = other.split(separator: ".").map(String.init)
        forged = input.bool() ? other : parts[0] + "." + otherParts[1] + "." + otherParts[2]
    case 3:  // alg none, HS256 keyed with the leaf's public key, or an empty signature
        let alg = input.pick(["none", "HS256", "ES384", "RS256", "es256"])
        let header = base64URL(try! JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": Fixture.chain], options: [.sortedKeys]))
        let input1 = header + "." + parts[1]
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input1.utf8), using: SymmetricKey(data: Fixture.ca.leafKey.publicKey.x963Representation))
        forged = input1 + "." + input.pick(["", base64URL(mac), parts[2]])
    case 4:  // chain reordered, shortened or padded, signature kept
        let chain = Fixture.chain
        let order = input.pick([[1, 0, 2], [0, 2, 1], [0, 1], [0, 1, 2, 2], [2, 1, 0], [0, 0, 2]])
        let header = base64URL(try! JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": order.map { chain[$0] }], options: [.sortedKeys]))
        forged = header + "." + parts[1] + "." + parts[2]
    default:  // bytes of the token text changed
        var bytes = Array(honest.utf8)
        for _ in 0...input.below(4) {
            let at = input.below(bytes.count)
            bytes[at] = input.pick(Array("-_.=+/AQgw09 ".utf8) + [input.byte()])
        }
        forged = String(decoding: bytes, as: UTF8.self)
    }
    if forged == honest { return }
    // A change that leaves the signed bytes and signature as they were (base64url padding bits) is no forgery.
    let changed = forged.split(separator: ".", omittingEmptySubsequences: false)
    if changed.count == 3, changed[0] == parts[0], changed[1] == parts[1],
        fromBase64URL(changed[2]) == fromBase64URL(Substring(parts[2]))
    {
        check(forged, mustAccept: nil)
        return
    }
    check(forged, mustAccept: false)
}
