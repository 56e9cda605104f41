import Crypto
import Foundation
import PolicyModel
import Testing

@testable import Identity

/// Issue 12: each test here failed on a7aae14 (before the hardening) and passes after it.
@Suite(.storeScope) struct HardeningTests {
    // MARK: 1. Refresh successors

    /// What an attacker holding a copied refresh token computed offline from the old code.
    static func offlineDerivation(_ refreshToken: String) -> (refresh: String, access: String) {
        let key = SymmetricKey(data: Data(refreshToken.utf8))
        let r = HMAC<SHA256>.authenticationCode(for: Data("gatehouse.refresh.successor".utf8), using: key)
        let a = HMAC<SHA256>.authenticationCode(for: Data("gatehouse.refresh.access".utf8), using: key)
        return ("ghr_" + SecretCoding.base64URL(r), "gha_" + SecretCoding.base64URL(a))
    }

    @Test(arguments: StoreKind.testable) func aSpentRefreshTokenPredictsNothing(store: StoreKind) async throws {
        let h = try await Harness(store)
        let first = try await h.service.signInAnonymously(source: .inProcess)
        let copied = first.refreshToken  // a backup, a log, a device image
        let second = try await h.service.refresh(refreshToken: first.refreshToken)
        h.clock.advance(60)
        let third = try await h.service.refresh(refreshToken: second.refreshToken)
        let guess1 = Self.offlineDerivation(copied)
        let guess2 = Self.offlineDerivation(guess1.refresh)
        #expect(guess1.refresh != second.refreshToken && guess1.access != second.accessToken)
        #expect(guess2.refresh != third.refreshToken && guess2.access != third.accessToken)
        #expect(await identityError { try await h.service.validate(accessToken: guess2.access) }?.code == .unauthenticated)
        // Racing refreshes within the grace window still agree.
        let racing = try await h.service.refresh(refreshToken: second.refreshToken)
        #expect(racing.refreshToken == third.refreshToken && racing.accessToken == third.accessToken)
    }

    // MARK: 2. Step-up for account changes

    @Test(arguments: StoreKind.testable) func aStaleSessionCannotLinkAnotherAppleId(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.pinUser()
        h.clock.advance(10 * 60)  // the access token is still live, the PIN verification is not recent
        let (token, nonce) = try await h.appleToken(sub: "attacker.apple.id")
        let e = await identityError { try await h.service.linkApple(accessToken: alice.accessToken, identityToken: token, rawNonce: nonce) }
        #expect(e?.code == .forbidden)
    }

    @Test(arguments: StoreKind.testable) func linkingAppleDoesNotCountAsAnAppleVerification(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.pinUser()
        let (token, nonce) = try await h.appleToken(sub: "alice.apple.id")
        let linked = try await h.service.linkApple(accessToken: alice.accessToken, identityToken: token, rawNonce: nonce)
        // The new Apple id verified nothing the account already had: no PIN reset on its strength.
        let e = await identityError { try await h.service.resetPIN(accessToken: linked.accessToken, newPIN: "739154") }
        #expect(e?.code == .forbidden)
    }

    @Test(arguments: StoreKind.testable) func staleSessionsCannotChangeUsernameExportOrDelete(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.pinUser()
        h.clock.advance(10 * 60)
        #expect(await identityError { try await h.service.setUsername(accessToken: alice.accessToken, username: "alice2") }?.code == .forbidden)
        #expect(await identityError { try await h.service.exportData(accessToken: alice.accessToken) }?.code == .forbidden)
        #expect(await identityError { try await h.service.deleteAccount(accessToken: alice.accessToken) }?.code == .forbidden)
    }

    @Test(arguments: StoreKind.testable) func changingThePINEndsTheOtherSessions(store: StoreKind) async throws {
        let h = try await Harness(store)
        let phone = try await h.pinUser()
        let tablet = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        try await h.service.changePIN(accessToken: phone.accessToken, currentPIN: "4826", newPIN: "739154")
        #expect(await identityError { try await h.service.validate(accessToken: tablet.accessToken) }?.code == .unauthenticated)
        _ = try await h.service.validate(accessToken: phone.accessToken)
    }

    @Test(arguments: StoreKind.testable) func unlinkingAppleKeepsAnotherCredentialAndEndsOtherSessions(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken(sub: "apple.only")
        let apple = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        // The Apple id is the only credential: unlinking it would leave nothing to sign in with.
        #expect(await identityError { try await h.service.unlinkApple(accessToken: apple.accessToken) }?.code == .conflict)
        _ = try await h.service.setPIN(accessToken: apple.accessToken, pin: "739154")
        let (token2, nonce2) = try await h.appleToken(sub: "apple.only")
        let other = try await h.service.signInWithApple(identityToken: token2, rawNonce: nonce2)
        h.clock.advance(10 * 60)
        #expect(await identityError { try await h.service.unlinkApple(accessToken: apple.accessToken) }?.code == .forbidden)
        let fresh = try await h.service.verifyPIN(accessToken: apple.accessToken, pin: "739154")
        try await h.service.unlinkApple(accessToken: fresh.accessToken)
        #expect(await identityError { try await h.service.validate(accessToken: other.accessToken) }?.code == .unauthenticated)
        #expect(try await h.count("appleIdentity") == 0)
    }

    // MARK: 3. Lockout and enumeration

    @Test(arguments: StoreKind.testable) func knownAndUnknownUsernamesGetTheSameAnswers(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser()
        func answers(_ username: String) async -> [String] {
            var seen: [String] = []
            for _ in 0..<5 {
                let e = await identityError { try await h.service.signIn(username: username, pin: "1357", source: .inProcess) }
                seen.append("\(e?.code.rawValue ?? "-") \(e?.retryAfter.map { Int($0) } ?? -1)")
            }
            return seen
        }
        let known = await answers("alice")
        let unknown = await answers("nobody_here")
        #expect(known == unknown)
    }

    @Test(arguments: StoreKind.testable) func strangersCannotLockAnAccountForGood(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser()
        for _ in 0..<12 {
            _ = await identityError { try await h.service.signIn(username: "alice", pin: "1357", source: .inProcess) }
            h.clock.advance(2 * 86400)
        }
        // Past the delay, the owner's PIN works again: no permanent lock from guesses alone.
        _ = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
    }

    @Test(arguments: StoreKind.testable) func anOperatorLiftsALockForAPINOnlyAccount(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.pin.lockoutThreshold = 4 }
        let alice = try await h.pinUser()
        for _ in 0..<4 {
            _ = await identityError { try await h.service.signIn(username: "alice", pin: "1357", source: .inProcess) }
            h.clock.advance(2 * 86400)
        }
        #expect(await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }?.code == .locked)
        #expect(await identityError { try await h.service.unlockPIN(userId: alice.userId, operator: OperatorCredential(token: "nope")) }?.code == .forbidden)
        try await h.service.unlockPIN(userId: alice.userId, operator: .testOperator)
        _ = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
    }

    // MARK: 4. Blocklist and spraying

    @Test(arguments: StoreKind.testable, ["1234", "0000", "1111", "123456", "1212", "2580"])
    func commonPINsAreRefused(store: StoreKind, pin: String) async throws {
        let h = try await Harness(store)
        let e = await identityError { try await h.service.register(username: "bob", pin: pin, source: .inProcess) }
        #expect(e?.code == .invalidInput && e?.field == "pin")
    }

    @Test(arguments: StoreKind.testable) func sprayingOneGuessPerAccountHitsTheSourceLimit(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.abuse.sourcePINFailures = 5 }
        for i in 0..<8 { _ = try await h.service.register(username: "user\(i)", pin: "739154", source: ClientSource("10.0.0.\(i)")) }
        let attacker = ClientSource("203.0.113.7")
        var codes: [IdentityError.Code] = []
        for i in 0..<8 {
            if let e = await identityError({ try await h.service.signIn(username: "user\(i)", pin: "4826", source: attacker) }) { codes.append(e.code) }
        }
        #expect(codes == Array(repeating: .invalidCredentials, count: 5) + Array(repeating: .throttled, count: 3))
        // Another client is not affected.
        _ = try await h.service.signIn(username: "user7", pin: "739154", source: ClientSource("10.0.0.7"))
    }

    @Test(arguments: StoreKind.testable) func aBurstOfFailuresRaisesTheAlarm(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.abuse.alarmFailures = 6 }
        for i in 0..<8 {
            _ = await identityError { try await h.service.signIn(username: "ghost\(i)", pin: "4826", source: ClientSource("198.51.100.\(i)")) }
        }
        #expect(try await h.auditRows().filter { $0.kind == "failure_rate_alarm" }.count == 1)
        #expect(h.service.counters.value(.failureRateAlarms) == 1 && h.service.counters.value(.pinFailures) == 8)
    }

    @Test(arguments: StoreKind.testable) func takenAnswersAreRateLimited(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.abuse.usernameProbes = 3 }
        _ = try await h.pinUser()
        let prober = ClientSource("192.0.2.1")
        var codes: [IdentityError.Code] = []
        for _ in 0..<5 {
            if let e = await identityError({ try await h.service.register(username: "alice", pin: "739154", source: prober) }) { codes.append(e.code) }
        }
        #expect(codes == [.conflict, .conflict, .conflict, .throttled, .throttled])
    }

    @Test(arguments: StoreKind.testable) func oneSourceCannotCreateAccountsWithoutLimit(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.abuse.signUps = 3 }
        let bot = ClientSource("203.0.113.9")
        for _ in 0..<2 { _ = try await h.service.signInAnonymously(source: bot) }
        _ = try await h.service.register(username: "bot1", pin: "739154", source: bot)
        #expect(await identityError { try await h.service.signInAnonymously(source: bot) }?.code == .throttled)
        #expect(await identityError { try await h.service.register(username: "bot2", pin: "739154", source: bot) }?.code == .throttled)
        h.clock.advance(3600)
        _ = try await h.service.signInAnonymously(source: bot)
    }

    // MARK: 5. Apple credential state

    @Test(arguments: StoreKind.testable) func aStaleAppleTokenDoesNotUndoARevocation(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken()
        let oldNonce = try await h.service.beginAppleSignIn()
        let old = h.apple.token(AppleFixture.claims(rawNonce: oldNonce, now: h.clock.now))
        _ = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        h.clock.advance(60)
        try await h.revokeApple("000123.apple.user")
        h.clock.advance(60)
        // A token Apple issued before the revocation must not set the identity back to authorized.
        let e = await identityError { try await h.service.signInWithApple(identityToken: old, rawNonce: oldNonce) }
        #expect(e?.code == .tokenRejected)
    }

    @Test(arguments: StoreKind.testable) func credentialStatesNeedAnOperatorOrASignedNotification(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken(sub: "victim.apple.id")
        let victim = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        // No operator token, or a wrong one: refused, and nothing changes.
        for credential in [OperatorCredential(token: "guess"), OperatorCredential(token: "")] {
            let e = await identityError {
                try await h.service.updateAppleCredentialState(appleUserId: "victim.apple.id", state: .transferred, transferredTo: "attacker.sub", operator: credential)
            }
            #expect(e?.code == .forbidden)
        }
        #expect(try await h.service.store.read { tx in try await tx.fetchOne(AppleIdentityRow.self, "subject", .text("attacker.sub")) } == nil)
        // A notification signed by someone else: refused.
        let forger = try AppleFixture(kid: h.apple.kid)
        let forged = forger.token(Self.notificationClaims(type: "consent-revoked", sub: "victim.apple.id", at: h.clock.now))
        #expect(await identityError { try await h.service.handleAppleNotification(signedPayload: forged) }?.field == "payload.signature")
        _ = try await h.service.validate(accessToken: victim.accessToken)
        // Apple's own notification: applied, sessions end.
        h.clock.advance(10)
        let revoked = h.apple.token(Self.notificationClaims(type: "consent-revoked", sub: "victim.apple.id", at: h.clock.now))
        #expect(try await h.service.handleAppleNotification(signedPayload: revoked) == .applied(.revoked))
        #expect(await identityError { try await h.service.validate(accessToken: victim.accessToken) }?.code == .unauthenticated)
        // The user authorizes the app again; replaying the old notification changes nothing.
        h.clock.advance(60)
        let (again, againNonce) = try await h.appleToken(sub: "victim.apple.id")
        let back = try await h.service.signInWithApple(identityToken: again, rawNonce: againNonce)
        #expect(try await h.service.handleAppleNotification(signedPayload: revoked) == .stale)
        _ = try await h.service.validate(accessToken: back.accessToken)
    }

    static func notificationClaims(type: String, sub: String, at now: Date) -> [String: Any] {
        let event = String(decoding: try! JSONSerialization.data(withJSONObject: ["type": type, "sub": sub, "event_time": Int(now.timeIntervalSince1970 * 1000)]), as: UTF8.self)
        return ["iss": "https://appleid.apple.com", "aud": AppleFixture.clientId, "iat": Int(now.timeIntervalSince1970), "jti": UUID().uuidString, "events": event]
    }

    // MARK: 8. JWKS fetch storm

    @Test(arguments: StoreKind.testable) func junkTokensWithAnEmptyKeyCacheFetchOnce(store: StoreKind) async throws {
        let h = try await Harness(store)
        h.fetcher.set(Data("503 Service Unavailable".utf8))  // the key source is down: the cache stays empty
        let verifier = h.service.appleVerifier
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<20 {
                group.addTask {
                    let token = AppleFixture.json(["alg": "RS256", "kid": "junk-\(i)"]) + "." + AppleFixture.json(["sub": "x"]) + "." + SecretCoding.base64URL([1, 2, 3])
                    _ = try? await verifier.verify(token, expectedNonceHash: Data(count: 32))
                }
            }
        }
        for i in 0..<5 {
            let token = AppleFixture.json(["alg": "RS256", "kid": "later-\(i)"]) + "." + AppleFixture.json(["sub": "x"]) + "." + SecretCoding.base64URL([1, 2, 3])
            _ = try? await verifier.verify(token, expectedNonceHash: Data(count: 32))
        }
        #expect(h.fetcher.fetches == 1)
    }

    @Test(arguments: StoreKind.testable) func concurrentTokensForANewKeyWaitForTheOneFetch(store: StoreKind) async throws {
        let h = try await Harness(store)
        let fetcher = YieldingJWKSFetcher(try AppleFixture.jwks([h.apple]))
        let cache = AppleKeyCache(fetcher: fetcher, configuration: h.service.configuration.apple, now: h.clock.source)
        let verifier = AppleTokenVerifier(configuration: h.service.configuration.apple, keys: cache, now: h.clock.source)
        let nonceHash = SecretCoding.sha256("n")
        _ = try await verifier.verify(h.apple.token(AppleFixture.claims(rawNonce: "n", now: h.clock.now)), expectedNonceHash: nonceHash)
        // Apple rotates in a new key; ten tokens naming it arrive at once.
        let rotated = try AppleFixture(kid: "test-key-rotated")
        fetcher.set(try AppleFixture.jwks([h.apple, rotated]))
        h.clock.advance(120)
        let token = rotated.token(AppleFixture.claims(rawNonce: "n", now: h.clock.now))
        let accepted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 { group.addTask { (try? await verifier.verify(token, expectedNonceHash: nonceHash)) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(accepted == 10)
        #expect(fetcher.fetches == 2)
    }

    // MARK: 9. GDPR

    @Test(arguments: StoreKind.testable) func deletedDataDoesNotSurviveInTheDatabaseFiles(store: StoreKind) async throws {
        let h = try await Harness(store)
        let marker = "zebulonmarker"
        let tokens = try await h.service.register(username: marker, pin: "739154", source: .inProcess)
        try await h.service.deleteAccount(accessToken: tokens.accessToken)
        switch store {
        case .sqlite:
            for name in try FileManager.default.contentsOfDirectory(atPath: h.dir.path) {
                let bytes = try Data(contentsOf: h.dir.appendingPathComponent(name))
                #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(name) still holds the deleted username")
            }
        case .postgres:
            // The server's files are not the client's to read: every row of every table holds no trace.
            #expect(!(try await h.dumpAllTables()).contains(marker))
        }
    }

    @Test(arguments: StoreKind.testable) func aDeletedUsersRowsNoLongerLinkToEachOther(store: StoreKind) async throws {
        let h = try await Harness(store)
        let tokens = try await h.pinUser()
        _ = try await h.service.verifyPIN(accessToken: tokens.accessToken, pin: "4826")
        try await h.service.logDecision(
            userId: tokens.userId, action: "view", resourceType: "project", resourceId: "p-secret", effect: "allow", reason: "allowed", policyHash: "h",
            policyLocation: nil)
        try await h.service.deleteAccount(accessToken: tokens.accessToken)
        let actors = try await h.auditRows().compactMap(\.actor)
        #expect(Set(actors).count == actors.count, "a deleted user's audit rows share a pseudonym")
        let resourceIds = try await h.rows(DecisionLogRow.self).map(\.resourceId)
        #expect(resourceIds.allSatisfy { $0 == nil })
    }

    // MARK: 7. Log retention

    @Test(arguments: StoreKind.testable) func anOperatorExpiresOldLogRowsAndNothingElse(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.pinUser()
        try await h.service.logDecision(userId: alice.userId, action: "view", resourceType: "app", resourceId: nil, effect: "deny", reason: "default_deny", policyHash: "h", policyLocation: nil)
        let old = try await h.count("auditEvent")
        h.clock.advance(40 * 86400)
        _ = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        #expect(await identityError { try await h.service.expireLogs(olderThan: 35 * 86400, operator: OperatorCredential(token: "x")) }?.code == .forbidden)
        #expect(await identityError { try await h.service.expireLogs(olderThan: 86400, operator: .testOperator) }?.field == "maxAge")
        let expired = try await h.service.expireLogs(olderThan: 35 * 86400, operator: .testOperator)
        // The sign-in's two rows stay: its `pending` reservation and its success.
        #expect(expired.audit == old && expired.decisions == 1)
        #expect(try await h.auditRows().map(\.kind) == ["sign_in", "sign_in", "logs_expired"])
        // Younger rows are still append-only, whatever SQL tries.
        for sql in [#"DELETE FROM "auditEvent""#, #"UPDATE "auditEvent" SET "reason" = 'x'"#, #"UPDATE "auditEvent" SET "actor" = 'x'"#] {
            await #expect(throws: (any Error).self, "\(sql)") { try await h.execute(sql) }
        }
        #expect(try await h.auditRows().map(\.kind) == ["sign_in", "sign_in", "logs_expired"])
    }

    // MARK: 10. Small items

    @Test(arguments: StoreKind.testable) func setUsernameIsAudited(store: StoreKind) async throws {
        let h = try await Harness(store)
        let anon = try await h.service.signInAnonymously(source: .inProcess)
        try await h.service.setUsername(accessToken: anon.accessToken, username: "carol")
        #expect(try await h.auditRows().contains { $0.kind == "username_set" })
    }

    @Test(arguments: StoreKind.testable) func anUnverifiedEmailIsNotKept(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken(overrides: ["email": "someone@example.com", "is_private_email": "false", "email_verified": "false"])
        let s = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        let user = try await h.service.store.read { tx in try await tx.fetchOne(UserRow.self, "id", .text(s.userId))! }
        #expect(user.email == nil)
    }
}

/// A JWKS source that suspends while fetching, so concurrent callers overlap with the fetch.
final class YieldingJWKSFetcher: JWKSFetcher {
    private let inner: StaticJWKSFetcher
    init(_ jwks: Data) { inner = StaticJWKSFetcher(jwks) }
    func set(_ jwks: Data) { inner.set(jwks) }
    var fetches: Int { inner.fetches }
    func fetchJWKS() async throws -> Data {
        for _ in 0..<50 { await Task.yield() }
        return try await inner.fetchJWKS()
    }
}

extension Harness {
    /// Revokes an Apple id the way the server will: an operator call (on a7aae14: the unauthenticated one).
    func revokeApple(_ sub: String) async throws {
        try await service.updateAppleCredentialState(appleUserId: sub, state: .revoked, operator: .testOperator)
    }
}
