import Crypto
import Foundation
import PolicyModel

extension IdentityService {
    package static func validateDeviceId(_ id: String) throws(IdentityError) {
        guard (1...128).contains(id.utf8.count), id.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalid("deviceId", "must be 1 to 128 printable ASCII characters")
        }
    }

    /// A device's P-256 public key from its X9.63 (65 bytes, uncompressed), raw (64 bytes) or DER SubjectPublicKeyInfo
    /// bytes, as an app sends it to enrol; `invalid_input` naming `publicKey` otherwise.
    package static func devicePublicKey(_ bytes: Data) throws(IdentityError) -> P256.Signing.PublicKey {
        if let k = try? P256.Signing.PublicKey(x963Representation: bytes) { return k }
        if let k = try? P256.Signing.PublicKey(rawRepresentation: bytes) { return k }
        if let k = try? P256.Signing.PublicKey(derRepresentation: bytes) { return k }
        throw IdentityError.invalid("publicKey", "must be a P-256 public key (X9.63, raw or DER)")
    }

    /// A device's ECDSA P-256 signature from DER or raw (r || s) bytes, nil when it is neither.
    package static func deviceSignature(_ bytes: Data) -> P256.Signing.ECDSASignature? {
        (try? P256.Signing.ECDSASignature(derRepresentation: bytes)) ?? (try? P256.Signing.ECDSASignature(rawRepresentation: bytes))
    }

    /// Enrols (or re-enrols, replacing the old key) a device's P-256 public key.
    ///
    /// Needs a session whose last verification was by the PIN or a device key within
    /// `reverificationWindow`; other sessions of the account end. `publicKey` is X9.63 (65 bytes,
    /// uncompressed), raw (64 bytes) or DER SubjectPublicKeyInfo.
    public func enrollDeviceKey(accessToken: String, deviceId: String, publicKey: Data) async throws {
        try Self.validateDeviceId(deviceId)
        let key = try Self.devicePublicKey(publicKey)
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, methods: [AuthMethod.pin, AuthMethod.biometric], action: "enrolling a device key")
            try await self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            let replaced = try await tx.deleteAll(DeviceKeyRow.self, ["userId": .text(s.userId), "deviceId": .text(deviceId)])
            try await tx.insert(DeviceKeyRow(id: self.newId(), userId: s.userId, deviceId: deviceId, publicKey: key.x963Representation, failedAttempts: 0, lockedAt: nil, createdAt: t))
            try await self.audit(tx, .deviceEnrolled, method: AuthMethod.biometric, outcome: .success, reason: replaced > 0 ? "replaced" : "new", user: try await self.user(tx, s.userId), at: t)
        }
    }

    /// Issues a random 32-byte challenge for the device to sign; single-use, expires after `challengeLifetime`.
    public func deviceChallenge(accessToken: String, deviceId: String) async throws -> Data {
        try Self.validateDeviceId(deviceId)
        let challenge = Data(random.bytes(32))
        let t = now()
        let lifetime = configuration.challengeLifetime
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            guard let key = try await tx.fetchOne(DeviceKeyRow.self, ["userId": .text(s.userId), "deviceId": .text(deviceId)]) else {
                throw IdentityError(.notFound, field: "deviceId", "no key enrolled for this device")
            }
            guard key.lockedAt == nil else { throw IdentityError(.locked, field: "deviceId", "device key locked after failed signatures; verify with the PIN") }
            try await tx.insert(DeviceChallengeRow(challengeHash: SecretCoding.sha256(challenge), deviceKeyId: key.id, sessionId: s.id, expiresAt: t.addingTimeInterval(lifetime), usedAt: nil))
        }
        return challenge
    }

    /// Checks the device's ECDSA P-256/SHA-256 signature (DER or raw) over a challenge from this
    /// session and verifies the session at the `biometric` level. The challenge is spent either way.
    public func verifyDeviceSignature(accessToken: String, deviceId: String, challenge: Data, signature: Data) async throws -> StepUp {
        try Self.validateDeviceId(deviceId)
        guard challenge.count == 32 else { throw IdentityError.invalid("challenge", "must be the 32 bytes issued") }
        guard (64...72).contains(signature.count) else { throw IdentityError.invalid("signature", "must be an ECDSA P-256 signature") }
        let t = now()
        let limit = configuration.deviceKeyFailureLimit
        return try await commit { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            let user = try await self.user(tx, s.userId)
            guard var key = try await tx.fetchOne(DeviceKeyRow.self, ["userId": .text(s.userId), "deviceId": .text(deviceId)]) else {
                return .failure(IdentityError(.notFound, field: "deviceId", "no key enrolled for this device"))
            }
            guard key.lockedAt == nil else {
                try await self.audit(tx, .deviceVerify, method: AuthMethod.biometric, outcome: .failure, reason: "locked", user: user, at: t)
                return .failure(IdentityError(.locked, field: "deviceId", "device key locked after failed signatures; verify with the PIN"))
            }
            guard var c = try await tx.fetchOne(DeviceChallengeRow.self, "challengeHash", .blob(SecretCoding.sha256(challenge))),
                c.deviceKeyId == key.id, c.sessionId == s.id, c.usedAt == nil, c.expiresAt > t
            else {
                try await self.audit(tx, .deviceVerify, method: AuthMethod.biometric, outcome: .failure, reason: "bad_challenge", user: user, at: t)
                return .failure(IdentityError(.invalidCredentials, field: "challenge", "unknown, used or expired challenge"))
            }
            c.usedAt = t
            try await tx.update(c)
            let publicKey = try P256.Signing.PublicKey(x963Representation: key.publicKey)
            guard let sig = Self.deviceSignature(signature), publicKey.isValidSignature(sig, for: challenge) else {
                key.failedAttempts += 1
                try await self.audit(tx, .deviceVerify, method: AuthMethod.biometric, outcome: .failure, reason: "bad_signature", user: user, at: t)
                if key.failedAttempts >= limit {
                    key.lockedAt = t
                    try await self.audit(tx, .deviceLocked, method: AuthMethod.biometric, outcome: .failure, reason: "failures:\(key.failedAttempts)", user: user, at: t)
                }
                try await tx.update(key)
                return .failure(IdentityError(.invalidCredentials, field: "signature", "does not verify"))
            }
            key.failedAttempts = 0
            try await tx.update(key)
            var verified = s
            verified.device = SessionDevice.verified(byDeviceKey: deviceId, s.device)
            let result = try await self.stepUp(tx, verified, method: AuthMethod.biometric, presented: accessToken, at: t)
            try await self.audit(tx, .deviceVerify, method: AuthMethod.biometric, outcome: .success, user: user, at: t)
            return .success(result)
        }
    }
}
