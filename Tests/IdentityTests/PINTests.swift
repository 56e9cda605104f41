import Crypto
import Foundation
import PolicyModel
import Testing

@testable import Identity

@Suite(.storeScope) struct PINTests {
    @Test(arguments: StoreKind.testable) func registerAndSignIn(store: StoreKind) async throws {
        let h = try await Harness(store)
        let a = try await h.pinUser("Alice", pin: "024680")
        let b = try await h.service.signIn(username: "alice", pin: "024680", source: .inProcess)  // usernames ignore case
        #expect(a.userId == b.userId)
        #expect(try await h.service.validate(accessToken: b.accessToken).authMethod == AuthMethod.pin)
        let cred = try await h.pinCredentials()[0]
        #expect(cred.algorithm == "pbkdf2-sha256" && cred.rounds == Harness.testRounds && cred.salt.count == 16 && cred.hash.count == 32)
    }

    @Test(arguments: StoreKind.testable, ["", "123", "1234567", "12a4", "１２３４", "12 34", "-123"])
    func pinFormatIsChecked(store: StoreKind, pin: String) async throws {
        let h = try await Harness(store)
        let e = await identityError { try await h.service.register(username: "bob", pin: pin, source: .inProcess) }
        #expect(e?.code == .invalidInput && e?.field == "pin")
    }

    @Test(arguments: StoreKind.testable) func saltsDifferPerUser(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser("one", pin: "6152")
        _ = try await h.pinUser("two", pin: "6152")
        let rows = try await h.pinCredentials()
        #expect(rows[0].salt != rows[1].salt && rows[0].hash != rows[1].hash)
    }

    @Test func productionPolicyHasAtLeast600kRounds() throws {
        var policy = PINPolicy()
        #expect(policy.rounds >= 600_000)
        #expect(throws: IdentityError.self) { try policy.setRounds(100_000) }
        try policy.setRounds(1_000_000)
        #expect(policy.rounds == 1_000_000)
    }

    @Test(arguments: StoreKind.testable) func bruteForceHitsGrowingDelaysThenLockout(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.pin.lockoutThreshold = 10 }
        _ = try await h.pinUser()
        let expected: [Int: TimeInterval] = [3: 30, 4: 60, 5: 300, 6: 900, 7: 1800, 8: 3600, 9: 14400]
        for attempt in 1...10 {
            let e = await identityError { try await h.service.signIn(username: "alice", pin: String(format: "%04d", attempt), source: .inProcess) }
            #expect(e?.code == .invalidCredentials, "attempt \(attempt)")
            if let delay = expected[attempt] {
                // Inside the delay even the right PIN is refused, without a KDF run or a count.
                let early = await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }
                #expect(early?.code == .throttled && early?.retryAfter == delay, "attempt \(attempt)")
                h.clock.advance(delay)
            }
        }
        let locked = await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }
        #expect(locked?.code == .locked && locked?.field == "pin")
        h.clock.advance(30 * 86400)
        #expect(await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }?.code == .locked)
        let rows = try await h.auditRows()
        #expect(rows.filter { $0.kind == "pin_lockout" }.count == 1)
        #expect(rows.filter { $0.kind == "sign_in" && $0.reason == "wrong_pin" }.count == 10)
        // Seven throttled refusals; the one 30 s after another is coalesced (one row per minute per actor).
        #expect(rows.filter { $0.reason == "throttled" }.count == 6)
        #expect(h.service.counters.value(.refusals) == 9 && h.service.counters.value(.coalescedAuditRows) == 1)
    }

    @Test(arguments: StoreKind.testable) func aRightPINBeforeTheScheduleStartsResetsTheCount(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser()
        for _ in 0..<2 { _ = await identityError { try await h.service.signIn(username: "alice", pin: "9999", source: .inProcess) } }
        _ = try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess)
        let cred = try await h.pinCredentials()[0]
        #expect(cred.failedAttempts == 0 && cred.nextAttemptAt == nil)
    }

    @Test(arguments: StoreKind.testable) func unknownUsersGetTheSameAnswerAsWrongPINs(store: StoreKind) async throws {
        let h = try await Harness(store)
        let e = await identityError { try await h.service.signIn(username: "nobody", pin: "1234", source: .inProcess) }
        #expect(e?.code == .invalidCredentials && e?.field == "pin")
    }

    @Test(arguments: StoreKind.testable) func parallelGuessesAreAllCountedAndCannotSkipTheDelay(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser()
        let codes = await withTaskGroup(of: IdentityError.Code?.self) { group in
            for i in 0..<24 {
                group.addTask { await identityErrorCode { try await h.service.signIn(username: "alice", pin: String(format: "%04d", 5000 + i), source: .inProcess) } }
            }
            return await group.reduce(into: [IdentityError.Code?]()) { $0.append($1) }
        }
        #expect(codes.allSatisfy { $0 == .invalidCredentials || $0 == .throttled })
        let cred = try await h.pinCredentials()[0]
        let wrong = try await h.auditRows().filter { $0.kind == "sign_in" && $0.reason == "wrong_pin" }.count
        // Every attempt that ran the KDF was counted first: no lost update.
        #expect(cred.failedAttempts == wrong)
        // The delay starts at the third failure, so only a handful of guesses got through at once.
        #expect(wrong <= 6)
    }

    @Test(arguments: StoreKind.testable) func legacyHashIsAcceptedOnceThenReplaced(store: StoreKind) async throws {
        let h = try await Harness(store)
        let anon = try await h.service.signInAnonymously(source: .inProcess)
        try await h.service.setUsername(accessToken: anon.accessToken, username: "legacy")
        let legacy = SecretCoding.hex(SHA256.hash(data: Data("couple_pin_salt_v1_4321".utf8)))
        try await h.service.importLegacyPINHash(userId: anon.userId, hexHash: legacy.uppercased())
        #expect(await identityError { try await h.service.signIn(username: "legacy", pin: "1234", source: .inProcess) }?.code == .invalidCredentials)
        _ = try await h.service.signIn(username: "legacy", pin: "4321", source: .inProcess)
        let cred = try await h.pinCredentials()[0]
        #expect(cred.algorithm == "pbkdf2-sha256" && cred.hash.count == 32 && cred.hash != Data(legacy.utf8))
        #expect(try await h.auditRows().contains { $0.kind == "pin_rehashed" && $0.reason == "legacy-sha256" })
        _ = try await h.service.signIn(username: "legacy", pin: "4321", source: .inProcess)
        #expect(try await h.auditRows().filter { $0.kind == "pin_rehashed" }.count == 1)
        #expect(await identityError { try await h.service.importLegacyPINHash(userId: anon.userId, hexHash: "xyz") }?.field == "hexHash")
    }

    @Test(arguments: StoreKind.testable) func raisedRoundsRehashOnTheNextSuccess(store: StoreKind) async throws {
        let h = try await Harness(store)
        _ = try await h.pinUser()
        var config = h.service.configuration
        config.pin = .unsafeForTesting(rounds: 2 * Harness.testRounds)
        let raised = IdentityService(store: h.service.store, configuration: config, jwksFetcher: h.fetcher, now: h.clock.source)
        _ = try await raised.signIn(username: "alice", pin: "4826", source: .inProcess)
        let cred = try await h.pinCredentials()[0]
        #expect(cred.rounds == 2 * Harness.testRounds)
        _ = try await raised.signIn(username: "alice", pin: "4826", source: .inProcess)
    }

    @Test(arguments: StoreKind.testable) func changePINNeedsTheCurrentOne(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await h.pinUser()
        let e = await identityError { try await h.service.changePIN(accessToken: s.accessToken, currentPIN: "1111", newPIN: "5281") }
        #expect(e?.code == .invalidCredentials && e?.field == "currentPIN")
        try await h.service.changePIN(accessToken: s.accessToken, currentPIN: "4826", newPIN: "5281")
        _ = try await h.service.signIn(username: "alice", pin: "5281", source: .inProcess)
        #expect(await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }?.code == .invalidCredentials)
        #expect(try await h.auditRows().contains { $0.kind == "pin_changed" })
    }

    @Test(arguments: StoreKind.testable) func setPINIsOnlyForAccountsWithoutOne(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await h.pinUser()
        #expect(await identityError { try await h.service.setPIN(accessToken: s.accessToken, pin: "6152") }?.code == .conflict)
    }
}

func identityErrorCode(_ body: () async throws -> some Any) async -> IdentityError.Code? {
    do {
        _ = try await body()
        return nil
    } catch {
        return (error as? IdentityError)?.code
    }
}
