import Foundation
import PolicyModel
import Testing

@testable import Identity

@Suite(.storeScope) struct SessionTests {
    @Test(arguments: StoreKind.testable) func anonymousSignInGivesAValidSession(store: StoreKind) async throws {
        let h = try await Harness(store)
        let tokens = try await h.service.signInAnonymously(source: .inProcess)
        #expect(tokens.accessToken.hasPrefix("gha_") && tokens.refreshToken.hasPrefix("ghr_"))
        let s = try await h.service.validate(accessToken: tokens.accessToken)
        #expect(s.userId == tokens.userId)
        #expect(s.authMethod == AuthMethod.anonymous)
        // Only hashes are stored.
        let stored = try #require(try await h.rows(SessionRow.self).first).accessTokenHash
        #expect(stored == SecretCoding.sha256(tokens.accessToken))
    }

    @Test(arguments: StoreKind.testable) func malformedAndUnknownTokensAreUnauthenticated(store: StoreKind) async throws {
        let h = try await Harness(store)
        for token in ["", "gha_", "gha_" + String(repeating: "A", count: 43), "not a token", String(repeating: "x", count: 10_000)] {
            let e = await identityError { try await h.service.validate(accessToken: token) }
            #expect(e?.code == .unauthenticated)
        }
    }

    @Test(arguments: StoreKind.testable) func idleTimeoutEndsTheSession(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.accessTokenLifetime = 4 * 3600 }
        let tokens = try await h.service.signInAnonymously(source: .inProcess)
        h.clock.advance(3500)
        _ = try await h.service.validate(accessToken: tokens.accessToken)  // activity resets the idle timer
        h.clock.advance(3500)
        _ = try await h.service.validate(accessToken: tokens.accessToken)
        h.clock.advance(3601)
        #expect(await identityError { try await h.service.validate(accessToken: tokens.accessToken) }?.code == .unauthenticated)
        #expect(await identityError { try await h.service.refresh(refreshToken: tokens.refreshToken) }?.code == .unauthenticated)
    }

    @Test(arguments: StoreKind.testable) func absoluteLifetimeEndsTheSessionHoweverActive(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.absoluteLifetime = 2 * 3600 }
        let tokens = try await h.service.signInAnonymously(source: .inProcess)
        var refresh = tokens.refreshToken
        for _ in 0..<3 {
            h.clock.advance(35 * 60)
            refresh = try await h.service.refresh(refreshToken: refresh).refreshToken
        }
        h.clock.advance(20 * 60)  // 125 minutes after sign-in, 20 after the last refresh
        #expect(await identityError { try await h.service.refresh(refreshToken: refresh) }?.code == .unauthenticated)
    }

    @Test(arguments: StoreKind.testable) func accessTokenExpiresAndRefreshRotatesBoth(store: StoreKind) async throws {
        let h = try await Harness(store)
        let first = try await h.service.signInAnonymously(source: .inProcess)
        h.clock.advance(16 * 60)
        #expect(await identityError { try await h.service.validate(accessToken: first.accessToken) }?.code == .unauthenticated)
        let second = try await h.service.refresh(refreshToken: first.refreshToken)
        #expect(second.accessToken != first.accessToken && second.refreshToken != first.refreshToken)
        #expect(second.sessionId == first.sessionId)
        _ = try await h.service.validate(accessToken: second.accessToken)
    }

    @Test(arguments: StoreKind.testable) func refreshTokenReuseRevokesTheFamily(store: StoreKind) async throws {
        let h = try await Harness(store)
        let first = try await h.service.signInAnonymously(source: .inProcess)
        let second = try await h.service.refresh(refreshToken: first.refreshToken)
        h.clock.advance(30)  // past the grace window
        let e = await identityError { try await h.service.refresh(refreshToken: first.refreshToken) }
        #expect(e?.code == .unauthenticated && e?.field == "refreshToken")
        // The whole family is dead: the legitimate holder's tokens too.
        #expect(await identityError { try await h.service.validate(accessToken: second.accessToken) }?.code == .unauthenticated)
        #expect(await identityError { try await h.service.refresh(refreshToken: second.refreshToken) }?.code == .unauthenticated)
        #expect(try await h.auditRows().contains { $0.kind == "refresh_token_reuse" && $0.reason == "family_revoked" })
    }

    @Test(arguments: StoreKind.testable) func reuseAfterTheSuccessorWasUsedRevokesEvenInsideTheGraceWindow(store: StoreKind) async throws {
        let h = try await Harness(store)
        let first = try await h.service.signInAnonymously(source: .inProcess)
        let second = try await h.service.refresh(refreshToken: first.refreshToken)
        _ = try await h.service.refresh(refreshToken: second.refreshToken)
        #expect(await identityError { try await h.service.refresh(refreshToken: first.refreshToken) }?.code == .unauthenticated)
    }

    @Test(arguments: StoreKind.testable) func racingRefreshesOfOneTokenGetOneSuccessor(store: StoreKind) async throws {
        let h = try await Harness(store)
        let first = try await h.service.signInAnonymously(source: .inProcess)
        let results = try await withThrowingTaskGroup(of: SessionTokens.self) { group in
            for _ in 0..<16 { group.addTask { try await h.service.refresh(refreshToken: first.refreshToken) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.refreshToken)).count == 1)
        #expect(Set(results.map(\.accessToken)).count == 1)
        _ = try await h.service.validate(accessToken: results[0].accessToken)
        #expect(try await h.count("refreshToken") == 2)
        _ = try await h.service.refresh(refreshToken: results[0].refreshToken)
    }

    @Test(arguments: StoreKind.testable) func signOutAndSignOutEverywhere(store: StoreKind) async throws {
        let h = try await Harness(store)
        let a = try await h.pinUser()
        let b = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        let c = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        try await h.service.signOut(accessToken: a.accessToken)
        #expect(await identityError { try await h.service.validate(accessToken: a.accessToken) }?.code == .unauthenticated)
        _ = try await h.service.validate(accessToken: b.accessToken)
        try await h.service.signOutEverywhere(accessToken: b.accessToken)
        for t in [b, c] {
            #expect(await identityError { try await h.service.validate(accessToken: t.accessToken) }?.code == .unauthenticated)
            #expect(await identityError { try await h.service.refresh(refreshToken: t.refreshToken) }?.code == .unauthenticated)
        }
    }

    @Test(arguments: StoreKind.testable) func aRiseInAuthLevelReplacesTheAccessToken(store: StoreKind) async throws {
        let h = try await Harness(store)
        let anon = try await h.service.signInAnonymously(source: .inProcess)
        let up = try await h.service.setPIN(accessToken: anon.accessToken, pin: "3751")
        #expect(up.rotated && up.accessToken != anon.accessToken)
        #expect(await identityError { try await h.service.validate(accessToken: anon.accessToken) }?.code == .unauthenticated)
        let s = try await h.service.validate(accessToken: up.accessToken)
        #expect(s.authMethod == AuthMethod.pin && s.verifiedAt == h.clock.now)
        // Same level again: the token stays, verifiedAt moves.
        h.clock.advance(120)
        let again = try await h.service.verifyPIN(accessToken: up.accessToken, pin: "3751")
        #expect(!again.rotated && again.accessToken == up.accessToken)
        #expect(try await h.service.validate(accessToken: up.accessToken).verifiedAt == h.clock.now)
    }

    @Test(arguments: StoreKind.testable) func mixedConcurrentTrafficKeepsEveryCountExact(store: StoreKind) async throws {
        let h = try await Harness(store)
        var users: [(String, SessionTokens)] = []
        for i in 0..<6 { users.append(("user\(i)", try await h.pinUser("user\(i)", pin: "3751"))) }
        let snapshot = users
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, tokens) in snapshot {
                group.addTask {
                    var r = tokens.refreshToken
                    for _ in 0..<5 { r = try await h.service.refresh(refreshToken: r).refreshToken }
                }
                for _ in 0..<2 { group.addTask { _ = try await h.service.signIn(username: name, pin: "3751", source: .inProcess) } }
                group.addTask { _ = try await h.service.signInAnonymously(source: .inProcess) }
            }
            try await group.waitForAll()
        }
        #expect(try await h.count("session") == 6 + 12 + 6)
        #expect(try await h.count("refreshToken") == 6 * 6 + 12 + 6)
        #expect(try await h.auditRows().filter { $0.kind == "sign_in" && $0.outcome == "success" }.count == 12)
        let creds = try await h.pinCredentials()
        #expect(creds.allSatisfy { $0.failedAttempts == 0 && $0.nextAttemptAt == nil })
    }

    @Test(arguments: StoreKind.testable) func manyConcurrentValidationsAndSignInsLoseNothing(store: StoreKind) async throws {
        let h = try await Harness(store)
        let tokens = try await h.service.signInAnonymously(source: .inProcess)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                group.addTask {
                    if i % 2 == 0 {
                        _ = try await h.service.signInAnonymously(source: .inProcess)
                    } else {
                        _ = try await h.service.validate(accessToken: tokens.accessToken)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await h.count("session") == 21)
        #expect(try await h.auditRows().filter { $0.kind == "sign_up" }.count == 21)
    }
}

@Suite(.storeScope) struct HousekeepingTests {
    @Test(arguments: StoreKind.testable) func purgeDeletesOnlyWhatCanNoLongerBeUsed(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.absoluteLifetime = 7200; $0.accessTokenLifetime = 7200; $0.idleTimeout = 7200 }
        let old = try await h.service.signInAnonymously(source: .inProcess)
        _ = try await h.service.beginAppleSignIn()
        let space = try await h.service.createSpace(accessToken: old.accessToken, name: "Old", inviteRole: "editor")
        h.clock.advance(3000)
        let fresh = try await h.service.signInAnonymously(source: .inProcess)
        let nonce = try await h.service.beginAppleSignIn()
        h.clock.advance(4300)  // the first session is past its absolute lifetime; the second is not
        _ = try await h.service.validate(accessToken: fresh.accessToken)
        let purged = try await h.service.purgeExpired()
        // Two nonces, one session (its refresh token goes by cascade), the spent sign-up window of the
        // in-process source; the share code lives 48 h.
        #expect(purged == 4)
        #expect(try await h.count("session") == 1)
        #expect(try await h.count("refreshToken") == 1)
        _ = nonce
        _ = space
    }
}
