import Crypto
import Foundation
import PolicyModel
import Testing
import _CryptoExtras

@testable import Identity

@Suite(.storeScope) struct AppleTests {
    @Test(arguments: StoreKind.testable) func firstSignInCreatesTheAccountAndKeepsTheName(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken()
        let s = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce, fullName: "Ana Souza")
        #expect(try await h.service.validate(accessToken: s.accessToken).authMethod == AuthMethod.apple)
        // Second sign-in: Apple sends no name, or the app sends another; the first is kept.
        let (token2, nonce2) = try await h.appleToken()
        let s2 = try await h.service.signInWithApple(identityToken: token2, rawNonce: nonce2, fullName: "Someone Else")
        #expect(s2.userId == s.userId)
        let user = try await h.service.store.read { tx in try await tx.fetchOne(UserRow.self, "id", .text(s.userId))! }
        #expect(user.displayName == "Ana Souza")
        #expect(user.email == "abc123@privaterelay.appleid.com" && user.isPrivateRelayEmail)
    }

    @Test(arguments: StoreKind.testable) func aNonceWorksOnce(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken()
        _ = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        let e = await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: nonce) }
        #expect(e?.code == .tokenRejected && e?.field == "rawNonce")
    }

    @Test(arguments: StoreKind.testable) func aNonceTheServiceDidNotIssueIsRefused(store: StoreKind) async throws {
        let h = try await Harness(store)
        let raw = SecretCoding.base64URL(Array(repeating: UInt8(9), count: 32))
        let token = h.apple.token(AppleFixture.claims(rawNonce: raw, now: h.clock.now))
        let e = await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: raw) }
        #expect(e?.field == "rawNonce")
        #expect(await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: "short") }?.code == .invalidInput)
    }

    /// Each attack names the part of the token that failed.
    @Test(arguments: StoreKind.testable) func attacksAreRejected(store: StoreKind) async throws {
        let h = try await Harness(store)
        let other = try AppleFixture(kid: h.apple.kid)  // same kid, different key: a forgery
        var cases: [(String, String, String)] = []  // (label, token+nonce..., expected field)
        func check(_ label: String, _ field: String, _ make: (String) throws -> String) async throws {
            let nonce = try await h.service.beginAppleSignIn()
            let token = try make(nonce)
            let e = await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: nonce) }
            #expect(e?.code == .tokenRejected, "\(label)")
            #expect(e?.field == field, "\(label): \(String(describing: e))")
            cases.append((label, token, field))
        }
        let now = h.clock.now
        try await check("forged signature", "identityToken.signature") { other.token(AppleFixture.claims(rawNonce: $0, now: now)) }
        try await check("tampered payload", "identityToken.signature") {
            let good = h.apple.token(AppleFixture.claims(rawNonce: $0, now: now))
            let parts = good.split(separator: ".")
            return [String(parts[0]), AppleFixture.json(AppleFixture.claims(sub: "someone.else", rawNonce: $0, now: now)), String(parts[2])].joined(separator: ".")
        }
        try await check("expired", "identityToken.exp") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["iat": Int(now.timeIntervalSince1970) - 1200, "exp": Int(now.timeIntervalSince1970) - 600]))
        }
        try await check("issued in the future", "identityToken.iat") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["iat": Int(now.timeIntervalSince1970) + 3600, "exp": Int(now.timeIntervalSince1970) + 4000]))
        }
        try await check("wrong audience", "identityToken.aud") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["aud": "com.attacker.app"])) }
        try await check("wrong issuer", "identityToken.iss") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["iss": "https://appleid.apple.com.evil"])) }
        try await check("wrong nonce", "identityToken.nonce") { _ in
            h.apple.token(AppleFixture.claims(rawNonce: SecretCoding.base64URL(Array(repeating: UInt8(1), count: 32)), now: now))
        }
        try await check("raw nonce in the claim instead of its hash", "identityToken.nonce") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["nonce": $0]))
        }
        try await check("missing nonce", "identityToken.nonce") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["nonce": NSNull()])) }
        try await check("unknown kid", "identityToken.kid") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now), header: ["alg": "RS256", "kid": "not-a-key"])
        }
        try await check("missing kid", "identityToken.kid") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now), header: ["alg": "RS256"]) }
        try await check("alg none", "identityToken.alg") {
            AppleFixture.json(["alg": "none", "kid": h.apple.kid]) + "." + AppleFixture.json(AppleFixture.claims(rawNonce: $0, now: now)) + "."
        }
        try await check("alg None, capitalised", "identityToken.alg") {
            AppleFixture.json(["alg": "None", "kid": h.apple.kid]) + "." + AppleFixture.json(AppleFixture.claims(rawNonce: $0, now: now)) + "."
        }
        try await check("HS256 keyed with the RSA public key", "identityToken.alg") {
            let input = AppleFixture.json(["alg": "HS256", "kid": h.apple.kid]) + "." + AppleFixture.json(AppleFixture.claims(rawNonce: $0, now: now))
            for keyBytes in [Data(h.apple.key.publicKey.pemRepresentation.utf8), h.apple.key.publicKey.derRepresentation] {
                _ = keyBytes
            }
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(h.apple.key.publicKey.pemRepresentation.utf8)))
            return input + "." + SecretCoding.base64URL(mac)
        }
        try await check("PS256 is not RS256", "identityToken.alg") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now), header: ["alg": "PS256", "kid": h.apple.kid])
        }
        try await check("embedded jwk", "identityToken.header") {
            h.apple.token(AppleFixture.claims(rawNonce: $0, now: now), header: ["alg": "RS256", "kid": h.apple.kid, "jwk": ["kty": "RSA"]])
        }
        try await check("two parts", "identityToken") { _ in "abc.def" }
        try await check("padding in base64url", "identityToken") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now)) + "==" }
        try await check("aud of the wrong type", "identityToken.payload") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["aud": 42])) }
        try await check("missing sub", "identityToken.sub") { h.apple.token(AppleFixture.claims(rawNonce: $0, now: now, overrides: ["sub": NSNull()])) }
        // No account was created by any of these, and each failure is in the audit log by field only.
        #expect(try await h.count("user") == 0)
        #expect(try await h.count("session") == 0)
        let failures = try await h.auditRows().filter { $0.kind == "sign_in" && $0.outcome == "failure" }
        // One row per failing part per minute (repeats are coalesced); every rejection is counted.
        #expect(failures.count == Set(cases.map(\.2)).count)
        #expect(h.service.counters.value(.appleTokenRejections) == cases.count)
        #expect(failures.allSatisfy { $0.reason?.hasPrefix("identityToken") == true && $0.actor == nil })
    }

    @Test(arguments: StoreKind.testable) func skewIsTolerated(store: StoreKind) async throws {
        let h = try await Harness(store)
        let now = h.clock.now
        let (_, nonce) = try await h.appleToken()
        let token = h.apple.token(AppleFixture.claims(rawNonce: nonce, now: now, overrides: ["iat": Int(now.timeIntervalSince1970) + 30, "exp": Int(now.timeIntervalSince1970) - 30]))
        _ = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
    }

    @Test(arguments: StoreKind.testable) func unknownKidRefetchesOnceThenUsesTheCache(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (t1, n1) = try await h.appleToken()
        _ = try await h.service.signInWithApple(identityToken: t1, rawNonce: n1)
        #expect(h.fetcher.fetches == 1)
        // Apple rotates in a new key: the first token naming it triggers one refetch.
        let rotated = try AppleFixture(kid: "test-key-2")
        h.fetcher.set(try AppleFixture.jwks([h.apple, rotated]))
        h.clock.advance(120)
        let n2 = try await h.service.beginAppleSignIn()
        _ = try await h.service.signInWithApple(identityToken: rotated.token(AppleFixture.claims(sub: "other", rawNonce: n2, now: h.clock.now)), rawNonce: n2)
        #expect(h.fetcher.fetches == 2)
        // A flood of random kids does not turn into a flood of fetches.
        for i in 0..<5 {
            let n = try await h.service.beginAppleSignIn()
            let token = h.apple.token(AppleFixture.claims(rawNonce: n, now: h.clock.now), header: ["alg": "RS256", "kid": "random-\(i)"])
            #expect(await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: n) }?.field == "identityToken.kid")
        }
        #expect(h.fetcher.fetches == 2)
    }

    @Test(arguments: StoreKind.testable) func linkingAppleToAnAnonymousAccount(store: StoreKind) async throws {
        let h = try await Harness(store)
        let anon = try await h.service.signInAnonymously(source: .inProcess)
        let (token, nonce) = try await h.appleToken(sub: "apple.link")
        let up = try await h.service.linkApple(accessToken: anon.accessToken, identityToken: token, rawNonce: nonce, fullName: "Bea")
        #expect(up.rotated && up.method == AuthMethod.apple)
        // Later Apple sign-ins land in the same account.
        let (t2, n2) = try await h.appleToken(sub: "apple.link")
        #expect(try await h.service.signInWithApple(identityToken: t2, rawNonce: n2).userId == anon.userId)
        // The same Apple id cannot be linked to a second account.
        let other = try await h.service.signInAnonymously(source: .inProcess)
        let (t3, n3) = try await h.appleToken(sub: "apple.link")
        let e = await identityError { try await h.service.linkApple(accessToken: other.accessToken, identityToken: t3, rawNonce: n3) }
        #expect(e?.code == .conflict && e?.field == "identityToken.sub")
    }

    @Test(arguments: StoreKind.testable) func revokedCredentialEndsEverySession(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (t1, n1) = try await h.appleToken()
        let a = try await h.service.signInWithApple(identityToken: t1, rawNonce: n1)
        let (t2, n2) = try await h.appleToken()
        let b = try await h.service.signInWithApple(identityToken: t2, rawNonce: n2)
        try await h.service.updateAppleCredentialState(appleUserId: "000123.apple.user", state: .revoked, operator: .testOperator)
        for s in [a, b] {
            #expect(await identityError { try await h.service.validate(accessToken: s.accessToken) }?.code == .unauthenticated)
            #expect(await identityError { try await h.service.refresh(refreshToken: s.refreshToken) }?.code == .unauthenticated)
        }
        #expect(try await h.auditRows().contains { $0.kind == "credential_state_changed" && $0.reason == "authorized->revoked" })
        // Authorizing again through Apple (a token issued after the revocation) brings the state back.
        h.clock.advance(1)
        let (t3, n3) = try await h.appleToken()
        _ = try await h.service.signInWithApple(identityToken: t3, rawNonce: n3)
        #expect(try await h.auditRows().contains { $0.reason == "revoked->authorized" })
    }

    @Test(arguments: StoreKind.testable) func notFoundAlsoSignsOut(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (t1, n1) = try await h.appleToken()
        let a = try await h.service.signInWithApple(identityToken: t1, rawNonce: n1)
        try await h.service.updateAppleCredentialState(appleUserId: "000123.apple.user", state: .notFound, operator: .testOperator)
        #expect(await identityError { try await h.service.validate(accessToken: a.accessToken) }?.code == .unauthenticated)
        #expect(await identityError { try await h.service.updateAppleCredentialState(appleUserId: "nobody", state: .revoked, operator: .testOperator) }?.code == .notFound)
    }

    @Test(arguments: StoreKind.testable) func transferredMovesTheAccountToTheNewAppleId(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (t1, n1) = try await h.appleToken(sub: "old.team.id")
        let a = try await h.service.signInWithApple(identityToken: t1, rawNonce: n1)
        #expect(await identityError { try await h.service.updateAppleCredentialState(appleUserId: "old.team.id", state: .transferred, operator: .testOperator) }?.field == "transferredTo")
        try await h.service.updateAppleCredentialState(appleUserId: "old.team.id", state: .transferred, transferredTo: "new.team.id", operator: .testOperator)
        _ = try await h.service.validate(accessToken: a.accessToken)  // sessions survive a transfer
        let (t2, n2) = try await h.appleToken(sub: "new.team.id")
        #expect(try await h.service.signInWithApple(identityToken: t2, rawNonce: n2).userId == a.userId)
        let (t3, n3) = try await h.appleToken(sub: "old.team.id")
        #expect(await identityError { try await h.service.signInWithApple(identityToken: t3, rawNonce: n3) }?.field == "identityToken.sub")
    }

    @Test(arguments: StoreKind.testable) func aLockedPINIsResetAfterAppleVerification(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.pin.lockoutThreshold = 10 }
        let (t1, n1) = try await h.appleToken()
        let s = try await h.service.signInWithApple(identityToken: t1, rawNonce: n1)
        try await h.service.setUsername(accessToken: s.accessToken, username: "carol")
        _ = try await h.service.setPIN(accessToken: s.accessToken, pin: "7391")
        for i in 0..<10 {
            _ = await identityError { try await h.service.signIn(username: "carol", pin: String(format: "%04d", i), source: .inProcess) }
            h.clock.advance(5 * 3600)
        }
        #expect(await identityError { try await h.service.signIn(username: "carol", pin: "7391", source: .inProcess) }?.code == .locked)
        let (t2, n2) = try await h.appleToken()
        let fresh = try await h.service.signInWithApple(identityToken: t2, rawNonce: n2)
        try await h.service.resetPIN(accessToken: fresh.accessToken, newPIN: "9371")
        _ = try await h.service.signIn(username: "carol", pin: "9371", source: .inProcess)
        // A PIN-verified session is not enough to reset.
        let pinSession = try await h.service.signIn(username: "carol", pin: "9371", source: .inProcess)
        #expect(await identityError { try await h.service.resetPIN(accessToken: pinSession.accessToken, newPIN: "6031") }?.code == .forbidden)
    }

    @Test(arguments: StoreKind.testable) func anExpiredNonceIsRefused(store: StoreKind) async throws {
        let h = try await Harness(store)
        let (token, nonce) = try await h.appleToken()
        h.clock.advance(601)
        // The token itself is still within exp (issued 10 minutes ago, exp + skew); the nonce is not.
        let e = await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: nonce) }
        #expect(e?.field == "rawNonce")
    }

    @Test(arguments: StoreKind.testable) func keysFromAFile(store: StoreKind) async throws {
        let h = try await Harness(store)
        let file = h.dir.appendingPathComponent("apple-keys.json")
        try AppleFixture.jwks([h.apple]).write(to: file)
        let service = IdentityService(store: h.service.store, configuration: h.service.configuration, jwksFetcher: FileJWKSFetcher(url: file), now: h.clock.source)
        let nonce = try await service.beginAppleSignIn()
        _ = try await service.signInWithApple(identityToken: h.apple.token(AppleFixture.claims(rawNonce: nonce, now: h.clock.now)), rawNonce: nonce)
        await #expect(throws: IdentityError.self) { try await URLJWKSFetcher(url: URL(string: "http://appleid.apple.com/auth/keys")!).fetchJWKS() }
    }

    @Test(arguments: StoreKind.testable) func jwksParsingSkipsWhatIsNotAnRS256SigningKey(store: StoreKind) async throws {
        let h = try await Harness(store)
        let p = try h.apple.key.publicKey.getKeyPrimitives()
        let n = SecretCoding.base64URL(p.modulus), e = SecretCoding.base64URL(p.publicExponent)
        let doc: [String: Any] = ["keys": [
            ["kty": "RSA", "kid": "good", "alg": "RS256", "use": "sig", "n": n, "e": e],
            ["kty": "RSA", "kid": "enc", "use": "enc", "n": n, "e": e],
            ["kty": "RSA", "kid": "ps", "alg": "PS256", "n": n, "e": e],
            ["kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"],
            ["kty": "RSA", "kid": "dup", "n": n, "e": e],
            ["kty": "RSA", "kid": "dup", "n": n, "e": e],
            ["kty": "RSA", "kid": "short", "n": SecretCoding.base64URL(p.modulus.prefix(128)), "e": e],
        ]]
        let keys = try AppleKeyCache.parseJWKS(try JSONSerialization.data(withJSONObject: doc))
        #expect(Set(keys.keys) == ["good"])
        #expect(throws: IdentityError.self) { try AppleKeyCache.parseJWKS(Data("not json".utf8)) }
    }
}
