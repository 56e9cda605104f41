import Crypto
import Foundation
import FuzzSupport
import Identity
import _CryptoExtras

/// libFuzzer entry for the Sign in with Apple readers: `AppleTokenVerifier.verify` (identity tokens),
/// `verifyNotification` (server-to-server notices) and `AppleKeyCache.parseJWKS` (the key document), with a test RSA
/// key standing in for Apple's. The first byte picks a mode:
/// - plain (0): the rest is a token, given to both verifiers.
/// - honest (1): the bytes choose claims (each right, replaced by a chosen string or number, or dropped) and header
///   fields, signed RS256 with the test key. The unchanged set must be accepted; whatever is accepted must satisfy every
///   documented rule: `iss` Apple, `aud` a configured client id, `exp` after now less the skew, `iat` neither in the
///   future nor older than the maximum age, `sub` of 1 to 255 bytes, the nonce the session's, and the claims returned
///   those signed.
/// - forged (2): a signed token changed afterwards (payload swapped, signature flipped, `alg` none or HS256, a `jwk` or
///   `x5c` header carrying the forger's own key, an unknown `kid`, signed by another key): it must be refused.
/// - jwks (3): the rest is a JWKS document: parsed without a trap; every key kept is an RS256 signing key with a `kid`.
public func fuzzAppleIdentityToken(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    switch input.byte() % 4 {
    case 0:
        let token = String(decoding: input.rest(), as: UTF8.self)
        if let claims = verify(token) { finding("a token nobody signed was accepted: \(claims)") }
        if notice(token) { finding("a notice nobody signed was accepted") }
    case 1: honest(&input)
    case 2: forged(&input)
    default:
        if let keys = try? AppleKeyCache.parseJWKS(Data(input.rest())), keys.keys.contains(where: \.isEmpty) { finding("a JWKS key without a kid was kept") }
    }
}

struct MemoryJWKS: JWKSFetcher {
    let document: Data
    func fetchJWKS() async throws -> Data { document }
}

enum Apple {
    static let now = Date(timeIntervalSince1970: 1_795_348_800)
    static let kid = "fuzz-key"
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let forger = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let clientId = "com.example.app"
    static let nonce = Data("fuzz-nonce".utf8)
    static let nonceHash = Data(SHA256.hash(data: nonce))
    static let nonceHex = nonceHash.map { String(format: "%02x", $0) }.joined()
    static let configuration = AppleSignInConfiguration(clientIds: [clientId, "com.example.web"])
    static let verifier: AppleTokenVerifier = {
        let p = try! key.publicKey.getKeyPrimitives()
        let jwks = try! JSONSerialization.data(withJSONObject: ["keys": [[
            "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": base64URL(p.modulus), "e": base64URL(p.publicExponent),
        ]]])
        let fixed: Now = { Apple.now }
        return AppleTokenVerifier(
            configuration: configuration, keys: AppleKeyCache(fetcher: MemoryJWKS(document: jwks), configuration: configuration, now: fixed), now: fixed)
    }()

    static func claims() -> [String: Any] {
        [
            "iss": AppleSignInConfiguration.issuer, "aud": clientId, "sub": "000123.abc", "iat": Int(now.timeIntervalSince1970) - 10,
            "exp": Int(now.timeIntervalSince1970) + 600, "nonce": nonceHex,
            "email": "x@privaterelay.appleid.com", "is_private_email": "true", "email_verified": "true",
        ]
    }

    static func sign(_ claims: [String: Any], header: [String: Any] = ["alg": "RS256", "kid": kid], with signer: _RSA.Signing.PrivateKey = key) -> String {
        let input = part(header) + "." + part(claims)
        let signature = try! signer.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }

    // Made once, not per input: an RS256 (PKCS #1 v1.5) signature is deterministic, so these are the very tokens forged
    // mode signed for every input before (2048-bit RSA signing under ASan was most of the target's own cost).
    /// The honest token forged mode changes.
    static let honestToken = sign(claims())
    /// The key's modulus (the HS256 forgery's secret).
    static let modulus = (try? key.publicKey.getKeyPrimitives().modulus) ?? Data()
    /// The fixed claims signed by the forger under each header that offers its key (as a JWK, a `jku`, an `x5c`) or none.
    static let forgerTokens: [String] = {
        let p = try! forger.publicKey.getKeyPrimitives()
        let jwk: [String: Any] = ["kty": "RSA", "n": base64URL(p.modulus), "e": base64URL(p.publicExponent)]
        let headers: [[String: Any]] = [
            ["alg": "RS256", "kid": kid, "jwk": jwk], ["alg": "RS256", "kid": kid, "jku": "https://evil.example/keys"],
            ["alg": "RS256", "kid": kid, "x5c": ["AAAA"]], ["alg": "RS256", "kid": kid],
        ]
        return headers.map { sign(claims(), header: $0, with: forger) }
    }()

    static func part(_ object: [String: Any]) -> String { base64URL(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) }
}

func base64URL(_ bytes: some Sequence<UInt8>) -> String {
    // Byte by byte (Foundation's replacingOccurrences, three times over, was a large part of each input's cost).
    var out: [UInt8] = []
    for byte in Data(bytes).base64EncodedString().utf8 where byte != UInt8(ascii: "=") {
        out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: "-") : byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte)
    }
    return String(decoding: out, as: UTF8.self)
}

func verify(_ token: String) -> AppleIdentityClaims? {
    let result = awaitResult { () -> Result<AppleIdentityClaims, IdentityError> in
        do throws(IdentityError) { return .success(try await Apple.verifier.verify(token, expectedNonceHash: Apple.nonceHash)) } catch { return .failure(error) }
    }
    switch result {
    case .success(let claims): return claims
    case .failure(let error):
        if error.field.isEmpty || error.reason.isEmpty { finding("a refusal without a field or reason") }
        if error.reason.contains("fuzz-nonce") { finding("an error repeats a secret") }
        return nil
    }
}

func notice(_ token: String) -> Bool {
    awaitResult { (try? await Apple.verifier.verifyNotification(token)) != nil }
}

func honest(_ input: inout FuzzInput) {
    var claims = Apple.claims()
    var header: [String: Any] = ["alg": "RS256", "kid": Apple.kid]
    let changes = input.below(4)
    for _ in 0..<changes {
        let text = input.string(max: 40)
        let number = Double(Int64(bitPattern: input.uint64()) % 10_000_000_000) / 10
        if input.below(5) == 0 {
            header[input.pick(["typ", "kid", "crit", "cty", "jku"])] = input.pick([text, "JWT", Apple.kid] as [Any])
            continue
        }
        let key = input.pick(["iss", "aud", "sub", "iat", "exp", "nonce", "email", "is_private_email", "email_verified", "events"])
        let offset = Double(input.pick([-86_401, -3_600, -61, -59, 0, 59, 61, 3_600, 86_401]))
        switch input.below(6) {
        case 0: claims[key] = text
        case 1: claims[key] = number
        case 2: claims[key] = Apple.now.timeIntervalSince1970 + offset
        case 3: claims[key] = [Apple.clientId, text]
        case 4: claims[key] = NSNull()
        default: claims[key] = nil
        }
    }
    let token = Apple.sign(claims, header: header)
    guard let accepted = verify(token) else {
        if changes == 0 { finding("an honest token was refused: \(token)") }
        return
    }
    // Every rule holds of what was accepted.
    let t = Apple.now
    if claims["iss"] as? String != AppleSignInConfiguration.issuer { finding("accepted with iss \(String(describing: claims["iss"]))") }
    if !Apple.configuration.clientIds.contains(accepted.audience) { finding("accepted for the audience \(accepted.audience)") }
    let audiences = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [String]) ?? []
    if !audiences.contains(accepted.audience) { finding("the audience returned was not signed") }
    if accepted.expiresAt.addingTimeInterval(Apple.configuration.clockSkew) <= t { finding("accepted an expired token") }
    if accepted.issuedAt > t.addingTimeInterval(Apple.configuration.clockSkew) || t.timeIntervalSince(accepted.issuedAt) > Apple.configuration.maxTokenAge {
        finding("accepted a token issued at \(accepted.issuedAt)")
    }
    if accepted.subject != claims["sub"] as? String || accepted.subject.isEmpty || accepted.subject.utf8.count > 255 { finding("accepted the subject \(accepted.subject)") }
    if claims["nonce"] as? String != Apple.claims()["nonce"] as? String { finding("accepted another nonce") }
}

func forged(_ input: inout FuzzInput) {
    let honest = Apple.honestToken
    let parts = honest.split(separator: ".").map(String.init)
    var forged: String
    switch input.below(6) {
    case 0:
        var claims = Apple.claims()
        claims[input.pick(["sub", "aud", "exp", "email"])] = input.string(max: 40)
        forged = parts[0] + "." + Apple.part(claims) + "." + parts[2]
    case 1:
        var signature = Array(Data(base64Encoded: parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "==") ?? Data())
        if signature.isEmpty { return }
        for _ in 0...input.below(3) {
            let at = input.below(signature.count)
            let flip = max(1, input.byte())
            signature[at] ^= flip
        }
        forged = parts[0] + "." + parts[1] + "." + base64URL(signature)
    case 2:
        let alg = input.pick(["none", "HS256", "RS512", "PS256", "rs256"])
        let input1 = Apple.part(["alg": alg, "kid": Apple.kid]) + "." + parts[1]
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input1.utf8), using: SymmetricKey(data: Apple.modulus))
        forged = input1 + "." + input.pick(["", base64URL(mac), parts[2]])
    case 3:  // the forger's own key offered in the header
        forged = input.pick(Apple.forgerTokens)
    case 4:
        let kid = input.pick(["", "other", Apple.kid.uppercased(), Apple.kid + " "]) + input.string(max: 8)
        if kid == Apple.kid { return }
        forged = Apple.sign(Apple.claims(), header: ["alg": "RS256", "kid": kid], with: Apple.forger)
    default:
        var bytes = Array(honest.utf8)
        for _ in 0...input.below(4) {
            let at = input.below(bytes.count)
            bytes[at] = input.pick(Array("-_.=+/AQgw09 ".utf8) + [input.byte()])
        }
        forged = String(decoding: bytes, as: UTF8.self)
        // Only the signature's last character may change without changing its bytes (unused low bits).
        if forged.split(separator: ".", omittingEmptySubsequences: false).prefix(2).joined(separator: ".") == parts[0] + "." + parts[1] { return }
    }
    if forged == honest { return }
    if let claims = verify(forged) { finding("a forged identity token was accepted: \(claims)") }
}
