import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// Issue 36's N6: anyone filled the decision log. Every denied decision of a signed-out caller was a permanent row, one
/// per batch item (one 10,000-item request wrote 5,428 rows). Now a signed-out decision is recorded only when asked for
/// separately, and one request adds at most its allowance of records.
@Suite(.startsServers) struct DecisionLogFloodTests {
    /// `count` denied items of a batch for no subject (actions the policy does not know).
    static func deniedBatch(_ count: Int) -> String {
        #"{"requests": ["# + (0..<count).map { #"{"action": "no_such_action_\#($0 % 10)", "resource": {"type": "app"}}"# }.joined(separator: ", ") + "]}"
    }

    @Test func neitherSignedOutCallersNorOneBatchFillTheDecisionLog() async throws {
        let t = try TestServer { $0.decisionLog = .denied }
        try await t.app.test(.router) { client in
            // Signed out: 2 x 1,000 denied items, none recorded.
            for _ in 0..<2 {
                try await client.execute(uri: "/v1/decide/batch", method: .post, body: body(Self.deniedBatch(1_000))) { r in
                    #expect(r.status == .ok)
                }
            }
            // A live (anonymous) session: 1,000 denied items in one batch, at most the request's allowance recorded.
            let token = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                try #require(r.object["accessToken"] as? String)
            }
            try await client.execute(uri: "/v1/decide/batch", method: .post, headers: bearer(token), body: body(Self.deniedBatch(1_000))) { r in
                #expect(r.status == .ok)
            }
            // The export writes what is queued first; the session's records are there.
            try await client.execute(uri: "/v1/me/export", method: .get, headers: bearer(token)) { r in
                let decisions = try #require(r.object["decisions"] as? [[String: Any]], "\(r.text)")
                #expect(!decisions.isEmpty && decisions.count <= 100, "\(decisions.count) records from one request")
            }
            // What was not written is counted, by reason.
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(r.text.contains(#"gatehouse_decision_log_dropped_total{reason="request_cap"} 900"#), "\(r.text)")
                #expect(r.text.contains("gatehouse_decision_log_written_total 100"), "\(r.text)")
            }
        }
        let database = try #require(t.server.store.sqlite)
        let rows = try await database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM decisionLog") ?? 0 }
        let signedOut = try await database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM decisionLog WHERE actor IS NULL") ?? 0 }
        #expect(signedOut == 0, "\(signedOut) rows for signed-out callers")
        #expect(rows <= 100, "\(rows) rows")
    }
}
