import Crypto
import Foundation
import PolicyModel

/// The current time; injected so tests control timeouts and lockouts without sleeping.
public typealias Now = @Sendable () -> Date

/// A source of cryptographically secure random bytes; injectable for tests.
public protocol RandomSource: Sendable {
    /// `count` random bytes, unpredictable to anyone else.
    func bytes(_ count: Int) -> [UInt8]
}

/// Random bytes from the operating system (`getrandom` on Linux).
public struct SystemRandomSource: RandomSource {
    /// The system source.
    public init() {}
    /// `count` bytes from `SystemRandomNumberGenerator`.
    public func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// Encoding, hashing and comparison helpers for secrets.
package enum SecretCoding {
    static func sha256(_ text: String) -> Data { Data(SHA256.hash(data: Data(text.utf8))) }
    static func sha256(_ bytes: some DataProtocol) -> Data { Data(SHA256.hash(data: bytes)) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lower-case hex digits, by value.
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// base64url without padding (`+` as `-`, `/` as `_`, no `=`), written byte by byte: a list's `nextCursor` is
    /// one per page, and Foundation's three string replacements (through NSString) cost about 100,000 instructions
    /// each time, an eighth of a page of 100 ids through the facade (`scripts/callgrind-lists.py` in Benchmarks).
    package static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        return String(unsafeUninitializedCapacity: (input.count * 4 + 2) / 3) { out in
            var o = 0
            var i = 0
            func put(_ sextet: UInt32) {
                out[o] = base64URLDigits[Int(sextet & 63)]
                o += 1
            }
            while i + 3 <= input.count {
                let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                put(v >> 18); put(v >> 12); put(v >> 6); put(v)
                i += 3
            }
            switch input.count - i {
            case 1:
                let v = UInt32(input[i]) << 16
                put(v >> 18); put(v >> 12)
            case 2:
                let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                put(v >> 18); put(v >> 12); put(v >> 6)
            default: break
            }
            return o
        }
    }

    /// The base64url alphabet, by value.
    private static let base64URLDigits: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Strict base64url without padding: rejects any other character, impossible lengths and non-canonical
    /// encodings (stray bits in the last character). Decoded byte by byte: it runs on every bearer token presented,
    /// and Foundation's string replacements cost more than the rest of a cached decision.
    package static func fromBase64URL(_ text: some StringProtocol) -> Data? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulated: UInt32 = 0
        var bits = 0
        var count = 0
        for c in text.utf8 {
            let value: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            count += 1
            accumulated = (accumulated << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulated >> UInt32(bits)))
                accumulated &= (1 << UInt32(bits)) - 1
            }
        }
        guard count % 4 != 1, accumulated == 0 else { return nil }
        return Data(out)
    }

    /// Compares two byte strings in time that depends only on their lengths.
    static func constantTimeEqual(_ a: some DataProtocol, _ b: some DataProtocol) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}

/// Kinds of bearer secret the service hands out, each with a recognisable prefix.
enum TokenKind: String {
    case access = "gha_"
    case refresh = "ghr_"

    /// A new 256-bit random token of this kind.
    func generate(_ random: any RandomSource) -> String { rawValue + SecretCoding.base64URL(random.bytes(32)) }

    /// The stored form of a presented token, or nil when it cannot be one of ours.
    func hash(of token: String) -> Data? {
        guard token.hasPrefix(rawValue), token.utf8.count == rawValue.utf8.count + 43,
            SecretCoding.fromBase64URL(token.dropFirst(rawValue.count)) != nil
        else { return nil }
        return SecretCoding.sha256(token)
    }
}

/// The bearer token of an operator (the server reads it from its own admin channel, never from an
/// app): operator actions such as `unlockPIN`, `deleteUser`, Apple credential states and log expiry
/// need one. The service stores only SHA-256 digests of the accepted tokens
/// (`IdentityConfiguration.operatorTokenDigests`). Printing it shows no token.
public struct OperatorCredential: Sendable, SecretRedacting {
    let token: String
    /// The credential an operator presented; accepted when its SHA-256 digest is configured.
    public init(token: String) { self.token = token }
    /// The digest to put in `operatorTokenDigests` for `token`.
    public static func digest(of token: String) -> Data { SecretCoding.sha256(token) }
    public var shownFields: KeyValuePairs<String, Any> { ["token": Self.redacted] }
}

/// The bearer tokens of a session. Printing or dumping it shows no token.
public struct SessionTokens: Sendable, SecretRedacting {
    /// The session's id (not a secret: it names the session in audit rows and sign-out).
    public let sessionId: String
    /// The signed-in user's id.
    public let userId: String
    /// The bearer token requests carry; stored only as a hash.
    public let accessToken: String
    /// When `accessToken` stops being accepted; refresh before then.
    public let accessExpiresAt: Date
    /// The single-use token that gets the next pair (`refresh`); presenting it twice ends the session.
    public let refreshToken: String

    public var shownFields: KeyValuePairs<String, Any> { ["session": sessionId, "user": userId, "tokens": Self.redacted] }
}

/// The result of a verification on an existing session: the access token to use from now on.
public struct StepUp: Sendable, SecretRedacting {
    /// A new token when the auth level rose (the old one is dead), else the token presented.
    public let accessToken: String
    /// Whether `accessToken` is new (the auth level rose, so the old token stopped working).
    public let rotated: Bool
    /// The method that verified: `pin` or `biometric`.
    public let method: String

    public var shownFields: KeyValuePairs<String, Any> { ["method": method, "rotated": rotated, "token": Self.redacted] }
}
