import Crypto
import Foundation
import PolicyModel
import Testing

@testable import Identity

@Suite(.storeScope) struct DeviceKeyTests {
    /// A PIN-verified user with an enrolled device key.
    func enrolled(_ h: Harness) async throws -> (SessionTokens, P256.Signing.PrivateKey) {
        let s = try await h.pinUser()
        let key = P256.Signing.PrivateKey()
        try await h.service.enrollDeviceKey(accessToken: s.accessToken, deviceId: "iphone-15", publicKey: key.publicKey.x963Representation)
        return (s, key)
    }

    @Test(arguments: StoreKind.testable) func aSignedChallengeVerifiesAtTheBiometricLevel(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        h.clock.advance(600)
        let challenge = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        let signature = try key.signature(for: challenge)
        let up = try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: challenge, signature: signature.derRepresentation)
        #expect(up.method == AuthMethod.biometric)
        let v = try await h.service.validate(accessToken: up.accessToken)
        #expect(v.authMethod == AuthMethod.biometric && v.verifiedAt == h.clock.now)
        // Raw (r||s) signatures work too.
        let c2 = try await h.service.deviceChallenge(accessToken: up.accessToken, deviceId: "iphone-15")
        _ = try await h.service.verifyDeviceSignature(accessToken: up.accessToken, deviceId: "iphone-15", challenge: c2, signature: try key.signature(for: c2).rawRepresentation)
        // Challenges are stored hashed.
        let stored = try await h.rows(DeviceChallengeRow.self).map(\.challengeHash)
        #expect(!stored.contains(challenge) && stored.contains(SecretCoding.sha256(challenge)))
    }

    @Test(arguments: StoreKind.testable) func enrolmentNeedsARecentPINVerification(store: StoreKind) async throws {
        let h = try await Harness(store)
        let anon = try await h.service.signInAnonymously(source: .inProcess)
        let key = P256.Signing.PrivateKey().publicKey.x963Representation
        #expect(await identityError { try await h.service.enrollDeviceKey(accessToken: anon.accessToken, deviceId: "d", publicKey: key) }?.code == .forbidden)
        let s = try await h.pinUser()
        h.clock.advance(301)
        _ = try await h.service.validate(accessToken: s.accessToken)
        #expect(await identityError { try await h.service.enrollDeviceKey(accessToken: s.accessToken, deviceId: "d", publicKey: key) }?.code == .forbidden)
        #expect(await identityError { try await h.service.enrollDeviceKey(accessToken: s.accessToken, deviceId: "d", publicKey: Data([4, 1, 2])) }?.field == "publicKey")
        #expect(await identityError { try await h.service.enrollDeviceKey(accessToken: s.accessToken, deviceId: "", publicKey: key) }?.field == "deviceId")
    }

    @Test(arguments: StoreKind.testable) func aChallengeCannotBeReplayed(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        let challenge = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        let sig = try key.signature(for: challenge).derRepresentation
        _ = try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: challenge, signature: sig)
        let e = await identityError { try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: challenge, signature: sig) }
        #expect(e?.code == .invalidCredentials && e?.field == "challenge")
    }

    @Test(arguments: StoreKind.testable) func aChallengeExpiresAfterAMinute(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        let challenge = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        h.clock.advance(61)
        let e = await identityError { try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: challenge, signature: try key.signature(for: challenge).derRepresentation) }
        #expect(e?.field == "challenge")
    }

    @Test(arguments: StoreKind.testable) func aChallengeIsBoundToItsSession(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        let other = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        let challenge = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        let e = await identityError { try await h.service.verifyDeviceSignature(accessToken: other.accessToken, deviceId: "iphone-15", challenge: challenge, signature: try key.signature(for: challenge).derRepresentation) }
        #expect(e?.field == "challenge")
    }

    @Test(arguments: StoreKind.testable) func repeatedFailuresLockTheKeyUntilAPINVerification(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        let impostor = P256.Signing.PrivateKey()
        for _ in 0..<5 {
            let c = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
            let e = await identityError { try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: c, signature: try impostor.signature(for: c).derRepresentation) }
            #expect(e?.code == .invalidCredentials && e?.field == "signature")
        }
        let locked = await identityError { try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15") }
        #expect(locked?.code == .locked)
        #expect(try await h.auditRows().filter { $0.kind == "device_locked" }.count == 1)
        // The seed's fallback: the PIN.
        _ = try await h.service.verifyPIN(accessToken: s.accessToken, pin: "4826")
        let c = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        _ = try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: c, signature: try key.signature(for: c).derRepresentation)
    }

    @Test(arguments: StoreKind.testable) func reEnrolmentReplacesTheOldKey(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, oldKey) = try await enrolled(h)
        let pending = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        let newKey = P256.Signing.PrivateKey()
        try await h.service.enrollDeviceKey(accessToken: s.accessToken, deviceId: "iphone-15", publicKey: newKey.publicKey.derRepresentation)
        #expect(try await h.count("deviceKey") == 1)
        // The old key's pending challenge died with it; a fresh challenge only verifies with the new key.
        #expect(await identityError { try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: pending, signature: try oldKey.signature(for: pending).derRepresentation) }?.field == "challenge")
        let c = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        #expect(await identityError { try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: c, signature: try oldKey.signature(for: c).derRepresentation) }?.field == "signature")
        let c2 = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        _ = try await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: c2, signature: try newKey.signature(for: c2).derRepresentation)
    }

    @Test(arguments: StoreKind.testable) func racingVerificationsSpendAChallengeOnce(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (s, key) = try await enrolled(h)
        let challenge = try await h.service.deviceChallenge(accessToken: s.accessToken, deviceId: "iphone-15")
        let sig = try key.signature(for: challenge).derRepresentation
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<12 {
                group.addTask { (try? await h.service.verifyDeviceSignature(accessToken: s.accessToken, deviceId: "iphone-15", challenge: challenge, signature: sig)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
    }
}
