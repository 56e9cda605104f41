import Foundation

/// Timeouts, limits and KDF parameters of the identity layer. Defaults are the documented numbers.
public struct IdentityConfiguration: Sendable {
    /// A session unused this long is over (seed 003: one hour).
    public var idleTimeout: TimeInterval = 3600
    /// A session (its refresh family) ends this long after sign-in, however active.
    public var absoluteLifetime: TimeInterval = 30 * 86400
    /// An access token must be refreshed this long after it was issued.
    public var accessTokenLifetime: TimeInterval = 15 * 60
    /// Racing refreshes of one refresh token within this window get the same successor.
    public var refreshGracePeriod: TimeInterval = 10
    /// `lastSeenAt` is written at most this often per session, so validation is mostly a read.
    public var lastSeenGranularity: TimeInterval = 60
    /// Changing a credential, the username, exporting or deleting needs a verification by a
    /// credential the account already had (PIN, device key, its Apple id) this recently.
    public var reverificationWindow: TimeInterval = 300
    /// Device-key challenges expire after this long.
    public var challengeLifetime: TimeInterval = 60
    /// Failed device-key signatures before the key is locked and a PIN is required.
    public var deviceKeyFailureLimit = 5
    /// A Sign in with Apple nonce must be used within this long.
    public var appleNonceLifetime: TimeInterval = 10 * 60
    /// Share codes expire after this long.
    public var shareCodeLifetime: TimeInterval = 48 * 3600
    /// Wrong share codes one user may enter per window before being refused.
    public var shareCodeGuessLimit = 5
    /// The window `shareCodeGuessLimit` counts over, in seconds.
    public var shareCodeGuessWindow: TimeInterval = 15 * 60
    /// The shortest age `expireLogs` may delete audit and decision rows at.
    public var minimumLogRetention: TimeInterval = 30 * 86400
    /// PIN hashing cost, salt size, the failure delays and the lockout threshold.
    public var pin = PINPolicy()
    /// Limits per client and the global failure-rate alarm.
    public var abuse = AbuseLimits()
    /// SHA-256 digests of the operator tokens that may call operator actions (`OperatorCredential`).
    /// Empty: no operator action is accepted.
    public var operatorTokenDigests: [Data] = []
    /// What a Sign in with Apple token must satisfy.
    public var apple: AppleSignInConfiguration
    /// What an App Store signed transaction or notification must satisfy; purchases are off without a bundle id.
    public var appStore = AppStoreConfiguration()

    /// The documented defaults, with the app's Sign in with Apple settings.
    public init(apple: AppleSignInConfiguration) {
        self.apple = apple
    }
}

/// PIN hashing parameters and the throttling schedule.
public struct PINPolicy: Sendable {
    /// The production floor for PBKDF2-SHA256 rounds (OWASP 2023).
    public static let minimumRounds = 600_000

    /// PBKDF2-SHA256 rounds for new hashes; a stored hash with fewer is re-hashed on the next success.
    public private(set) var rounds = PINPolicy.minimumRounds
    /// Bytes of random salt per PIN hash.
    public var saltBytes = 16
    /// Delay before the next attempt once this many consecutive failures have happened; the largest
    /// key's delay applies to every later failure too (one guess a day from the tenth on).
    public var delays: [Int: TimeInterval] = [3: 30, 4: 60, 5: 300, 6: 900, 7: 1800, 8: 3600, 9: 4 * 3600, 10: 86400]
    /// Consecutive failures that lock the PIN until a reset through another credential or an
    /// operator's `unlockPIN`. NIST SP 800-63B caps it at 100, which is used as is above 100. With the
    /// default delays a stranger needs about 90 days of guessing to reach 100; a lower value lets
    /// strangers lock accounts sooner.
    public var lockoutThreshold = 100

    /// `lockoutThreshold`, never above NIST's 100.
    var effectiveLockoutThreshold: Int { min(max(lockoutThreshold, 1), 100) }

    /// The production defaults: 600,000 rounds, 16-byte salts, the delays above, lockout at 100.
    public init() {}

    /// A policy with fewer rounds than production allows; tests only.
    public static func unsafeForTesting(rounds: Int) -> PINPolicy {
        var p = PINPolicy()
        p.rounds = rounds
        return p
    }

    /// Raises the round count (never below the production floor).
    public mutating func setRounds(_ rounds: Int) throws(IdentityError) {
        guard rounds >= PINPolicy.minimumRounds else {
            throw .invalid("pin.rounds", "must be at least \(PINPolicy.minimumRounds)")
        }
        self.rounds = rounds
    }

    func delay(afterFailures count: Int) -> TimeInterval {
        if count >= effectiveLockoutThreshold { return 0 }
        return delays.filter { $0.key <= count }.max { $0.key < $1.key }?.value ?? 0
    }
}

/// What an Apple identity token must satisfy.
public struct AppleSignInConfiguration: Sendable {
    /// The only accepted `iss` of an identity token.
    public static let issuer = "https://appleid.apple.com"
    /// The app's bundle id and Services ids: `aud` must be one of them.
    public var clientIds: Set<String>
    /// Tolerance for `exp` and `iat` against the clock.
    public var clockSkew: TimeInterval = 60
    /// A token issued longer ago than this is refused even if `exp` allows it.
    public var maxTokenAge: TimeInterval = 24 * 3600
    /// The JWKS is re-fetched for an unknown `kid` at most this often.
    public var minRefetchInterval: TimeInterval = 60
    /// Cached keys are refreshed after this long.
    public var keyCacheLifetime: TimeInterval = 24 * 3600

    /// Settings accepting tokens issued to `clientIds`, with the default tolerances.
    public init(clientIds: Set<String>) {
        self.clientIds = clientIds
    }
}
