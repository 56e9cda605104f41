import Crypto
import Foundation
import _CryptoExtras

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where Apple's signing keys (a JWKS document) come from; injectable so tests use their own keys.
public protocol JWKSFetcher: Sendable {
    /// The JWKS document's bytes (`{"keys": [...]}`); throws when it cannot be read.
    func fetchJWKS() async throws -> Data
}

/// Reads the JWKS from a file (an operator-pinned copy of `https://appleid.apple.com/auth/keys`).
public struct FileJWKSFetcher: JWKSFetcher {
    /// The file holding the JWKS.
    public let url: URL
    /// A fetcher that reads `url` (a `file:` URL) on every fetch.
    public init(url: URL) { self.url = url }
    /// The file's bytes; throws Foundation's error when it cannot be read.
    public func fetchJWKS() async throws -> Data { try Data(contentsOf: url) }
}

/// Fetches the JWKS over HTTPS.
public struct URLJWKSFetcher: JWKSFetcher {
    /// Apple's JWKS for Sign in with Apple, `https://appleid.apple.com/auth/keys`.
    public static let apple = URLJWKSFetcher(url: URL(string: "https://appleid.apple.com/auth/keys")!)
    /// Where the JWKS is fetched from.
    public let url: URL
    /// A fetcher for `url`, which must be `https` (checked on each fetch).
    public init(url: URL) { self.url = url }

    /// The document at `url`, fetched without cache with a 10-second timeout. Throws `invalidInput`
    /// (`jwksURL`) for a URL that is not `https`, and the transport's error or a non-200 status as an error.
    public func fetchJWKS() async throws -> Data {
        guard url.scheme == "https" else { throw IdentityError.invalid("jwksURL", "must be https") }
        let request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 10)
        return try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let http = response as? HTTPURLResponse, http.statusCode == 200, let data {
                    continuation.resume(returning: data)
                } else {
                    continuation.resume(throwing: IdentityError(.storage, field: "jwksURL", "JWKS fetch failed"))
                }
            }.resume()
        }
    }
}

/// Apple's RSA public keys by `kid`: cached, re-fetched when a token names a `kid` not yet seen or
/// the cache is stale, at most once per `minRefetchInterval` even while the cache is empty (a source
/// outage), and single-flight: concurrent callers wait for the one fetch under way. So random `kid`s
/// cannot make us hammer the source.
public actor AppleKeyCache {
    private let fetcher: any JWKSFetcher
    private let configuration: AppleSignInConfiguration
    private let now: Now
    private var keys: [String: _RSA.Signing.PublicKey] = [:]
    private var fetchedAt: Date?
    private var lastAttempt: Date?
    private var inFlight: (task: Task<[String: _RSA.Signing.PublicKey]?, Never>, startedAt: Date)?
    /// How many times the JWKS was fetched; tests read it.
    public private(set) var fetchCount = 0

    /// A cache that fetches through `fetcher` on first use; `IdentityService` builds the one it uses.
    package init(fetcher: any JWKSFetcher, configuration: AppleSignInConfiguration, now: @escaping Now) {
        self.fetcher = fetcher
        self.configuration = configuration
        self.now = now
    }

    /// The key with exactly this `kid`, or a `tokenRejected` error on `identityToken.kid`.
    func key(for kid: String) async throws(IdentityError) -> _RSA.Signing.PublicKey {
        let t = now()
        let stale = fetchedAt.map { t.timeIntervalSince($0) > configuration.keyCacheLifetime } ?? true
        if let key = keys[kid], !stale { return key }
        var running = inFlight
        if running == nil, lastAttempt.map({ t.timeIntervalSince($0) >= configuration.minRefetchInterval }) ?? true {
            lastAttempt = t
            fetchCount += 1
            let fetcher = self.fetcher
            running = (Task { try? AppleKeyCache.parseJWKS(try await fetcher.fetchJWKS()) }, t)
            inFlight = running
        }
        if let running {
            // Every waiter applies the result (whichever resumes first), so none reads the old keys.
            let fresh = await running.task.value
            if inFlight?.task == running.task { inFlight = nil }
            // A failed fetch or a document that does not parse keeps the keys we have: an outage of
            // the key source is not a reason to drop them.
            if let fresh, fetchedAt.map({ $0 < running.startedAt }) ?? true {
                keys = fresh
                fetchedAt = running.startedAt
            }
        }
        guard let key = keys[kid] else { throw .rejected("identityToken.kid", "no Apple key has this kid") }
        return key
    }

    /// The RS256 signing keys of a JWKS document; other key types and uses are skipped,
    /// and a `kid` that appears twice is dropped as ambiguous.
    package static func parseJWKS(_ data: Data) throws(IdentityError) -> [String: _RSA.Signing.PublicKey] {
        struct JWK: Decodable {
            var kty: String?
            var kid: String?
            var use: String?
            var alg: String?
            var n: String?
            var e: String?
        }
        struct JWKS: Decodable { var keys: [JWK] }
        guard let jwks = try? JSONDecoder().decode(JWKS.self, from: data) else {
            throw .invalid("jwks", "not a JWKS document")
        }
        var result: [String: _RSA.Signing.PublicKey] = [:]
        var seen: Set<String> = []
        for jwk in jwks.keys {
            guard jwk.kty == "RSA", jwk.use == nil || jwk.use == "sig", jwk.alg == nil || jwk.alg == "RS256",
                let kid = jwk.kid, !kid.isEmpty,
                let n = jwk.n.flatMap(SecretCoding.fromBase64URL), let e = jwk.e.flatMap(SecretCoding.fromBase64URL),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            if seen.contains(kid) {
                result[kid] = nil
                continue
            }
            seen.insert(kid)
            result[kid] = key
        }
        return result
    }
}

/// The claims of a verified Sign in with Apple identity token that the service uses.
public struct AppleIdentityClaims: Sendable, Hashable {
    /// Apple's stable user id for this team.
    public var subject: String
    /// The client id (`aud`) the token was issued for, one of `AppleSignInConfiguration.clientIds`.
    public var audience: String
    /// The email Apple shares, if the user shared one.
    public var email: String?
    /// Whether `email` is a private relay address (`is_private_email`).
    public var isPrivateEmail: Bool
    /// When Apple issued the token (`iat`).
    public var issuedAt: Date
    /// When the token stops being valid (`exp`).
    public var expiresAt: Date
}

/// Verifies Sign in with Apple identity tokens: a strict compact-JWS reader, RS256 only, exact `kid`.
public struct AppleTokenVerifier: Sendable {
    /// The issuer, audiences and time tolerances a token must satisfy.
    public let configuration: AppleSignInConfiguration
    /// Apple's public keys by `kid`, fetched and cached.
    package let keys: AppleKeyCache
    let now: Now

    /// A verifier over `keys`; `IdentityService` builds the one it uses.
    package init(configuration: AppleSignInConfiguration, keys: AppleKeyCache, now: @escaping Now) {
        self.configuration = configuration
        self.keys = keys
        self.now = now
    }

    static let maxTokenLength = 8192

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
        var typ: String?
        // Parameters that would let the token choose its own key or add semantics we do not implement.
        var crit: Ignored?
        var jku: Ignored?
        var jwk: Ignored?
        var x5u: Ignored?
        var x5c: Ignored?
    }

    private struct Payload: Decodable {
        var iss: String?
        var aud: Audience?
        var exp: Double?
        var iat: Double?
        var sub: String?
        var nonce: String?
        var email: String?
        var email_verified: FlexibleBool?
        var is_private_email: FlexibleBool?
        var jti: String?
        var events: Events?
    }

    /// The `events` claim of a server-to-server notification: a JSON string (as Apple sends it) or an object.
    private struct Events: Decodable {
        var event: AppleNotification.Event?
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let text = try? c.decode(String.self) {
                event = try? JSONDecoder().decode(AppleNotification.Event.self, from: Data(text.utf8))
            } else {
                event = try? c.decode(AppleNotification.Event.self)
            }
        }
    }

    /// Any JSON value, skipped.
    private struct Ignored: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    private enum Audience: Decodable {
        case one(String), many([String])
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .one(s) } else { self = .many(try c.decode([String].self)) }
        }
        var values: [String] {
            switch self {
            case .one(let s): [s]
            case .many(let a): a
            }
        }
    }

    /// Apple sends `is_private_email` as a bool or as the string "true"/"false".
    private struct FlexibleBool: Decodable {
        var value: Bool
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let b = try? c.decode(Bool.self) {
                value = b
            } else {
                let s = try c.decode(String.self)
                guard s == "true" || s == "false" else {
                    throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a bool")
                }
                value = s == "true"
            }
        }
    }

    /// The payload of a compact JWS signed RS256 by one of Apple's keys, with `iss` and `aud`
    /// checked; every failure names `field` or one of its parts.
    private func verifiedPayload(_ token: String, field: String) async throws(IdentityError) -> (Payload, audience: String) {
        guard token.utf8.count <= AppleTokenVerifier.maxTokenLength else { throw .rejected(field, "too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .rejected(field, "not a compact JWS") }
        guard let headerData = SecretCoding.fromBase64URL(parts[0]),
            let payloadData = SecretCoding.fromBase64URL(parts[1]),
            let signature = SecretCoding.fromBase64URL(parts[2])
        else { throw .rejected(field, "not base64url") }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData) else {
            throw .rejected(field + ".header", "not a JOSE header")
        }
        // Pinned: RS256 and nothing else (no `none`, no HS256 keyed with the public key).
        guard header.alg == "RS256" else { throw .rejected(field + ".alg", "must be RS256") }
        guard header.typ == nil || header.typ == "JWT" else { throw .rejected(field + ".typ", "must be JWT") }
        guard header.crit == nil, header.jku == nil, header.jwk == nil, header.x5u == nil, header.x5c == nil else {
            throw .rejected(field + ".header", "key-selecting or critical parameters are not accepted")
        }
        guard let kid = header.kid, !kid.isEmpty else { throw .rejected(field + ".kid", "is required") }
        let key: _RSA.Signing.PublicKey
        do { key = try await keys.key(for: kid) } catch { throw .rejected(field + ".kid", error.reason) }
        guard signature.count * 8 == key.keySizeInBits else { throw .rejected(field + ".signature", "wrong length") }
        let signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
        else { throw .rejected(field + ".signature", "does not verify") }

        guard let claims = try? JSONDecoder().decode(Payload.self, from: payloadData) else {
            throw .rejected(field + ".payload", "claims have the wrong types")
        }
        guard claims.iss == AppleSignInConfiguration.issuer else { throw .rejected(field + ".iss", "not Apple") }
        guard let audience = claims.aud?.values.first(where: configuration.clientIds.contains) else {
            throw .rejected(field + ".aud", "not one of the configured client ids")
        }
        return (claims, audience)
    }

    /// `iat` of a verified payload: present, not in the future, not older than `maxTokenAge`.
    private func issuedAt(_ claims: Payload, field: String, at t: Date) throws(IdentityError) -> Date {
        guard let iat = claims.iat, iat.isFinite else { throw .rejected(field + ".iat", "is required") }
        let issuedAt = Date(timeIntervalSince1970: iat)
        guard issuedAt <= t.addingTimeInterval(configuration.clockSkew) else { throw .rejected(field + ".iat", "in the future") }
        guard t.timeIntervalSince(issuedAt) <= configuration.maxTokenAge else { throw .rejected(field + ".iat", "too old") }
        return issuedAt
    }

    /// Checks a Sign in with Apple server-to-server notification (the `payload` JWS Apple posts to
    /// the configured endpoint): signed by Apple's keys, `iss` Apple, `aud` a configured client id,
    /// `iat` recent, and an `events` claim naming a known event type and a `sub`.
    public func verifyNotification(_ token: String) async throws(IdentityError) -> AppleNotification {
        let (claims, _) = try await verifiedPayload(token, field: "payload")
        let t = now()
        let issuedAt = try issuedAt(claims, field: "payload", at: t)
        guard let event = claims.events?.event else { throw .rejected("payload.events", "is required") }
        guard let kind = AppleNotification.Kind(rawValue: event.type) else { throw .rejected("payload.events.type", "unknown event type") }
        guard !event.sub.isEmpty, event.sub.utf8.count <= 255 else { throw .rejected("payload.events.sub", "is required") }
        // Apple documents `event_time` in milliseconds; seconds are accepted too.
        let seconds = event.eventTime.map { $0 > 100_000_000_000 ? $0 / 1000 : $0 }
        return AppleNotification(kind: kind, subject: event.sub, eventTime: seconds.map(Date.init(timeIntervalSince1970:)) ?? issuedAt, issuedAt: issuedAt)
    }

    /// Checks the token and returns its claims; `expectedNonceHash` is SHA-256 of the raw nonce.
    ///
    /// Every failure is a `tokenRejected` error naming the part that failed (`identityToken.aud`).
    public func verify(_ token: String, expectedNonceHash: Data) async throws(IdentityError) -> AppleIdentityClaims {
        let (claims, audience) = try await verifiedPayload(token, field: "identityToken")
        let t = now()
        guard let exp = claims.exp, exp.isFinite else { throw .rejected("identityToken.exp", "is required") }
        let expiresAt = Date(timeIntervalSince1970: exp)
        guard expiresAt.addingTimeInterval(configuration.clockSkew) > t else { throw .rejected("identityToken.exp", "expired") }
        let issuedAt = try issuedAt(claims, field: "identityToken", at: t)
        guard let sub = claims.sub, !sub.isEmpty, sub.utf8.count <= 255 else { throw .rejected("identityToken.sub", "is required") }
        guard let nonce = claims.nonce else { throw .rejected("identityToken.nonce", "is required") }
        guard SecretCoding.constantTimeEqual(Array(nonce.utf8), Array(SecretCoding.hex(expectedNonceHash).utf8)) else {
            throw .rejected("identityToken.nonce", "does not match the session's nonce")
        }
        // An address Apple does not vouch for is not kept.
        let email = claims.email_verified?.value == false ? nil : claims.email
        return AppleIdentityClaims(
            subject: sub, audience: audience, email: email, isPrivateEmail: email != nil && (claims.is_private_email?.value ?? false),
            issuedAt: issuedAt, expiresAt: expiresAt)
    }
}

/// A verified Sign in with Apple server-to-server notification.
public struct AppleNotification: Sendable, Hashable {
    /// The event Apple reports (the payload's `type`).
    public enum Kind: String, Sendable, Hashable {
        /// The user stopped forwarding email from a private relay address.
        case emailDisabled = "email-disabled"
        /// The user resumed forwarding email from a private relay address.
        case emailEnabled = "email-enabled"
        /// The user stopped using Sign in with Apple for the app: the Apple id becomes `revoked`.
        case consentRevoked = "consent-revoked"
        /// The user deleted their Apple account: the Apple id becomes `notFound`.
        case accountDelete = "account-delete"
    }

    struct Event: Decodable, Sendable, Hashable {
        var type: String
        var sub: String
        var eventTime: Double?
        enum CodingKeys: String, CodingKey {
            case type, sub
            case eventTime = "event_time"
        }
    }

    /// What happened.
    public var kind: Kind
    /// Apple's user id the event is about.
    public var subject: String
    /// When the event happened at Apple (`event_time`, else `iat`).
    public var eventTime: Date
    /// When Apple signed the notification (`iat`).
    public var issuedAt: Date
}
