import Crypto
import Foundation
import _CryptoExtras

@testable import Identity

/// Apple's side of Sign in with Apple's server-to-server notices, played by an RSA key the tests make: its JWKS (what
/// the identity services of the race tests fetch as Apple's keys) and notices signed RS256 with it, as Apple signs
/// them. One key for the process (an RSA key takes a while to make).
public struct RaceApple: Sendable {
    /// The `aud` of the notices: an app id `RaceWorld.configure` accepts.
    public static let clientId = RaceWorld.bundleId
    static let kid = "race-apple-key"
    public static let shared = RaceApple()

    let key: _RSA.Signing.PrivateKey

    init() {
        key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// Apple's keys as its JWKS endpoint serves them: this key only.
    public var jwksFetcher: any JWKSFetcher { StaticJWKS(document: jwks) }

    var jwks: Data {
        let p = try! key.publicKey.getKeyPrimitives()
        let jwk = ["kty": "RSA", "kid": Self.kid, "use": "sig", "alg": "RS256", "n": SecretCoding.base64URL(p.modulus), "e": SecretCoding.base64URL(p.publicExponent)]
        return try! JSONSerialization.data(withJSONObject: ["keys": [jwk]], options: [.sortedKeys])
    }

    /// A notice of `type` (`consent-revoked`, `account-delete`) about the Apple id `sub`, issued at `now` for an event
    /// at `now`, signed RS256 with this key: the `payload` of Apple's POST.
    public func notice(type: String, sub: String, at now: Date) -> String {
        let event = String(
            decoding: try! JSONSerialization.data(withJSONObject: ["type": type, "sub": sub, "event_time": Int(now.timeIntervalSince1970 * 1000)]),
            as: UTF8.self)
        let claims: [String: Any] = [
            "iss": AppleSignInConfiguration.issuer, "aud": Self.clientId, "iat": Int(now.timeIntervalSince1970), "jti": UUID().uuidString, "events": event,
        ]
        let input = Self.json(["alg": "RS256", "kid": Self.kid]) + "." + Self.json(claims)
        let signature = try! key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + SecretCoding.base64URL(signature.rawRepresentation)
    }

    static func json(_ object: [String: Any]) -> String {
        SecretCoding.base64URL(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }
}

/// A JWKS document served from memory.
struct StaticJWKS: JWKSFetcher {
    let document: Data
    func fetchJWKS() async throws -> Data { document }
}
