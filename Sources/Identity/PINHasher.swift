import Crypto
import Foundation
import _CryptoExtras

/// Hashes and checks PINs: PBKDF2-SHA256 with a per-user salt, parameters stored with the hash.
enum PINHasher {
    static let pbkdf2 = "pbkdf2-sha256"
    /// SHA-256(`couple_pin_salt_v1_` + pin), hex, from the ContaCasal apps; accepted once, then re-hashed.
    static let legacy = "legacy-sha256"
    static let legacySalt = "couple_pin_salt_v1_"

    /// Throws unless `pin` is 4 to 6 ASCII digits.
    static func validate(_ pin: String, field: String = "pin") throws(IdentityError) {
        let bytes = Array(pin.utf8)
        guard (4...6).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalid(field, "must be 4 to 6 digits")
        }
    }

    /// Throws unless `pin` is well formed and not on the blocklist: for PINs being chosen.
    static func validateNew(_ pin: String, field: String = "pin") throws(IdentityError) {
        try validate(pin, field: field)
        guard !PINBlocklist.contains(pin) else {
            throw .invalid(field, "is too common (repeated or sequential digits, a year, a keypad pattern); choose another")
        }
    }

    /// PBKDF2-SHA256 of `pin`, computed on `KeyDerivationLane`: a quarter of a second of CPU at the production
    /// rounds, which on a cooperative thread would hold one of the process's few (two on two cores) for all of it.
    static func derive(_ pin: String, salt: Data, rounds: Int) async -> Data {
        await KeyDerivationLane.run { deriveNow(pin, salt: salt, rounds: rounds) }
    }

    private static func deriveNow(_ pin: String, salt: Data, rounds: Int) -> Data {
        // Rounds come from the policy (floor 600,000) or from a stored row; the unchecked form lets
        // tests run with fewer and lets old rows with other counts still verify (then be re-hashed).
        let key = try! KDF.Insecure.PBKDF2.deriveKey(
            from: Array(pin.utf8), salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { Data($0) }
    }

    static func makeCredential(userId: String, pin: String, policy: PINPolicy, random: any RandomSource, now: Date) async
        -> PINCredentialRow
    {
        let salt = Data(random.bytes(policy.saltBytes))
        return PINCredentialRow(
            userId: userId, algorithm: pbkdf2, rounds: policy.rounds, salt: salt,
            hash: await derive(pin, salt: salt, rounds: policy.rounds), failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil,
            updatedAt: now)
    }

    /// Whether `pin` matches the stored credential, compared in constant time.
    ///
    /// Costs at least the policy's KDF rounds whatever is stored: a legacy hash or a row with fewer
    /// rounds is padded with a throwaway derivation, so timing does not tell them from other accounts.
    static func matches(_ pin: String, _ credential: PINCredentialRow, policy: PINPolicy) async -> Bool {
        let spent: Int
        let ok: Bool
        switch credential.algorithm {
        case pbkdf2 where credential.rounds > 0:
            ok = SecretCoding.constantTimeEqual(await derive(pin, salt: credential.salt, rounds: credential.rounds), credential.hash)
            spent = credential.rounds
        case legacy:
            let hex = SecretCoding.hex(SHA256.hash(data: Data((legacySalt + pin).utf8)))
            ok = SecretCoding.constantTimeEqual(Data(hex.utf8), credential.hash)
            spent = 0
        default:
            ok = false
            spent = 0
        }
        if spent < policy.rounds { _ = await derive(pin, salt: Data(count: policy.saltBytes), rounds: policy.rounds - spent) }
        return ok
    }

    /// Whether a matching credential should be re-hashed with the current policy.
    static func needsRehash(_ credential: PINCredentialRow, policy: PINPolicy) -> Bool {
        credential.algorithm != pbkdf2 || credential.rounds < policy.rounds
    }
}

/// Where key derivations run: dispatch threads of their own, never the cooperative pool.
///
/// A derivation is long CPU work that never suspends. Run on a cooperative thread, two PIN sign-ins at once on a
/// two-core server held every cooperative thread for their whole length: no other request was read, no timer fired
/// and deadlines passed for requests nobody had looked at. Here they compete for the processors like any thread,
/// and the cooperative pool keeps serving. The queue is concurrent and not overcommitting, so at most about one
/// derivation per processor runs at a time; the rest wait in the queue (the sign-in limiters bound how many come).
enum KeyDerivationLane {
    private static let queue = DispatchQueue(label: "gatehouse.identity.key-derivation", qos: .userInitiated, attributes: .concurrent)

    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
