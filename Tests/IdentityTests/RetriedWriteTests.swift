import Foundation
import Testing

@testable import Identity
@testable import IdentityPostgres

/// A PostgreSQL write body may run twice (a serialization failure, 40001/40P01, rolls the first run
/// back): what it does outside the database (the metrics' counters, the refusal-audit coalescing)
/// must happen once, after the commit. SQLite never runs a body twice; its cases are in `StoreTests`.
@Suite(.storeScope) struct RetriedWriteTests {
    /// The first run of the refusal's transaction is rolled back by an injected serialization failure;
    /// the second commits. Its audit row must exist, and the refusal counts once.
    @Test(.enabled(if: TestPostgres.url != nil, "PostgreSQL only; GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func aThrottledSignInRunTwiceIsAuditedAndCountedOnce() async throws {
        let h = try await Harness(.postgres)
        let store = try #require(h.postgres)
        _ = try await h.pinUser()
        for attempt in 1...3 {  // the third failure starts a 30 s delay
            let e = await identityError { try await h.service.signIn(username: "alice", pin: String(format: "%04d", attempt), source: .inProcess) }
            #expect(e?.code == .invalidCredentials)
        }
        let before = h.service.counters.snapshot
        store.failCommitForTesting()
        let refused = await identityError { try await h.service.signIn(username: "alice", pin: "4826", source: .inProcess) }
        #expect(refused?.code == .throttled)
        #expect(!store.commitFaultPending, "the injected serialization failure did not happen")
        let rows = try await h.auditRows().filter { $0.reason == "throttled" }
        #expect(rows.count == 1, "the refusal's audit row was lost: the rolled-back run marked it audited")
        #expect(h.service.counters.value(.refusals) - (before["refusals"] ?? 0) == 1)
        #expect(h.service.counters.value(.coalescedAuditRows) - (before["coalesced_audit_rows"] ?? 0) == 0)
    }

    /// The settling transaction of a wrong PIN (phase 2) runs twice: the failure, and the failure-rate
    /// alarm it raises, count once in the metrics as in the database.
    @Test(.enabled(if: TestPostgres.url != nil, "PostgreSQL only; GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func aWrongPINSettledTwiceIsCountedOnce() async throws {
        let h = try await Harness(.postgres) { $0.abuse.alarmFailures = 1 }
        let store = try #require(h.postgres)
        _ = try await h.pinUser()
        store.failCommitForTesting(afterSkipping: 1)  // phase 1 (the reservation) commits, phase 2 fails once
        let e = await identityError { try await h.service.signIn(username: "alice", pin: "0001", source: .inProcess) }
        #expect(e?.code == .invalidCredentials)
        #expect(!store.commitFaultPending, "the injected serialization failure did not happen")
        let rows = try await h.auditRows()
        #expect(rows.filter { $0.reason == "wrong_pin" }.count == 1)
        #expect(rows.filter { $0.kind == "failure_rate_alarm" }.count == 1)
        let global = try await h.rows(GuessLimitRow.self).first { $0.scope == "global:pin-failures" }
        #expect(global?.failures == 1)
        #expect(h.service.counters.value(.pinFailures) == 1)
        #expect(h.service.counters.value(.failureRateAlarms) == 1)
    }

    /// A rejected Sign in with Apple token: the write that burns the nonce and audits the rejection
    /// runs twice. The row is there, the refusal and the rejection count once, the nonce is spent.
    @Test(.enabled(if: TestPostgres.url != nil, "PostgreSQL only; GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func aRejectedAppleTokenRunTwiceIsAuditedAndCountedOnce() async throws {
        let h = try await Harness(.postgres)
        let store = try #require(h.postgres)
        let nonce = try await h.service.beginAppleSignIn()
        store.failCommitForTesting()
        let e = await identityError { try await h.service.signInWithApple(identityToken: "abc.def", rawNonce: nonce) }
        #expect(e?.field == "identityToken")
        #expect(!store.commitFaultPending, "the injected serialization failure did not happen")
        let rows = try await h.auditRows().filter { $0.kind == "sign_in" && $0.reason == "identityToken" }
        #expect(rows.count == 1, "the rejection's audit row was lost: the rolled-back run marked it audited")
        #expect(h.service.counters.value(.refusals) == 1 && h.service.counters.value(.coalescedAuditRows) == 0)
        #expect(h.service.counters.value(.appleTokenRejections) == 1)
        #expect(try await h.rows(AppleNonceRow.self).allSatisfy { $0.usedAt != nil })
    }

    /// The store's side of the rule, on both stores: a deferred action runs after the commit, once;
    /// never for a body that threw (rolled back), nor for a PostgreSQL run a serialization failure
    /// ended. SQLite never runs a body twice (one writer; a failed write is returned, not retried).
    @Test(arguments: StoreKind.testable) func afterCommitActionsRunOnceAndOnlyAfterACommit(store kind: StoreKind) async throws {
        struct Refused: Error {}
        let h = try await Harness(kind)
        let ran = CapturedLines()
        try await h.service.store.write { tx in
            tx.afterCommit { ran.append("committed") }
            #expect(ran.all.isEmpty, "an action ran before the commit")
        }
        #expect(ran.all == ["committed"])
        // PostgreSQL returns a body's own non-identity error as a storage error; either way it throws.
        await #expect(throws: (any Error).self) {
            try await h.service.store.write { tx in
                tx.afterCommit { ran.append("rolled back") }
                throw Refused()
            }
        }
        try await h.service.store.read { tx in tx.afterCommit { ran.append("read") } }
        var expected = ["committed", "read"]
        if let postgres = h.postgres {
            postgres.failCommitForTesting()
            let runs = CapturedLines()
            try await h.service.store.write { tx in
                runs.append("run")
                tx.afterCommit { ran.append("retried") }
            }
            #expect(runs.all.count == 2 && !postgres.commitFaultPending, "the body was not run again")
            expected.append("retried")
        }
        #expect(ran.all == expected)
    }
}
