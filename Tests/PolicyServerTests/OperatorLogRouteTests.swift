import Foundation
import Gatehouse
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import IdentityPostgres
import PolicyCompiler
import PolicyServer
import PolicyVerification
import Testing
import GatehouseTestSupport

/// The operator's log reads (issue 37, item 2) and what `policy replay` makes of them.
@Suite(.startsServers) struct OperatorLogRouteTests {
    static let operatorToken = "operator-secret-0123456789"

    /// Bearer decisions recorded with `--decision-log all` come back from `GET /v1/operator/decisions` newest first, a
    /// page at a time, filtered, as JSON and as NDJSON; replayed under the policy that made them, nothing flips; the
    /// audit log reads the same way; a wrong credential or a bad filter is refused naming it.
    @Test func decisionsAndAuditPageAndReplay() async throws {
        let t = try TestServer {
            $0.decisionLog = .all
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken)
        }
        let op = bearer(Self.operatorToken)
        try await t.app.test(.router) { client in
            let token = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in try #require(r.object["accessToken"] as? String) }
            let actions = ["ai_suggestions", "add_source", "cloud_sync", "add_source", "collaboration"]
            for action in actions {
                try await client.execute(
                    uri: "/v1/decide", method: .post, headers: bearer(token), body: body(#"{"action": "\#(action)", "resource": {"type": "app"}}"#)
                ) { r in #expect(r.status == .ok) }
            }
            // JSON pages of 2, newest first, until no cursor.
            var seen: [String] = []
            var cursor: String?
            repeat {
                let uri = "/v1/operator/decisions?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                cursor = try await client.execute(uri: uri, method: .get, headers: op) { r in
                    #expect(r.status == .ok, "\(r.text)")
                    let page = try #require(r.object["decisions"] as? [[String: Any]])
                    seen += page.compactMap { $0["action"] as? String }
                    #expect(page.allSatisfy { ($0["request"] as? [String: Any]) != nil && ($0["subject"] as? String)?.hasPrefix("u-") == true })
                    return r.object["nextCursor"] as? String
                }
            } while cursor != nil
            #expect(seen == actions.reversed())
            try await client.execute(uri: "/v1/operator/decisions?action=add_source", method: .get, headers: op) { r in
                #expect((r.object["decisions"] as? [[String: Any]])?.count == 2)
            }
            // NDJSON: what `policy replay` reads; under the serving policy nothing flips.
            let lines = try await client.execute(uri: "/v1/operator/decisions", method: .get, headers: op.merging([.accept: "application/x-ndjson"])) { r in
                #expect(r.headers[.contentType] == "application/x-ndjson")
                return r.text.split(separator: "\n", omittingEmptySubsequences: false)
            }
            let report = DecisionReplay.replay(lines: lines, candidate: t.server.service.policy, base: nil)
            #expect(report.replayed == actions.count && report.unreadableCount == 0 && report.totalFlips == 0)
            #expect(!lines.joined().contains(token))
            // The audit log, filtered by kind.
            let kind = try await client.execute(uri: "/v1/operator/audit", method: .get, headers: op) { r in
                let events = try #require(r.object["events"] as? [[String: Any]], "\(r.text)")
                return try #require(events.first?["kind"] as? String)
            }
            try await client.execute(uri: "/v1/operator/audit?kind=\(kind)", method: .get, headers: op) { r in
                let events = try #require(r.object["events"] as? [[String: Any]], "\(r.text)")
                #expect(!events.isEmpty && events.allSatisfy { $0["kind"] as? String == kind })
            }
            // Refusals name what is wrong.
            try await client.execute(uri: "/v1/operator/decisions", method: .get, headers: bearer(token)) { r in #expect(r.status == .unauthorized) }
            try await client.execute(uri: "/v1/operator/decisions?from=yesterday", method: .get, headers: op) { r in
                #expect(r.status == .badRequest && r.object["field"] as? String == "from")
            }
            try await client.execute(uri: "/v1/operator/decisions?color=red", method: .get, headers: op) { r in
                #expect(r.status == .badRequest && r.object["field"] as? String == "color")
            }
            try await client.execute(uri: "/v1/operator/decisions?cursor=zzz", method: .get, headers: op) { r in
                #expect(r.status == .badRequest && r.object["field"] as? String == "cursor")
            }
        }
    }

    /// `--shadow DIR`: answers are the live set's; `GET /v1/operator/shadow` and `/metrics` count the candidate's
    /// disagreements (here: every ai_suggestions denial becomes an allow, as the candidate gives the feature to free).
    @Test func theShadowSummaryCountsDisagreements() async throws {
        let candidate = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-shadow-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: TestServer.root.appendingPathComponent("policies/research-crawler"), to: candidate)
        let tiers = candidate.appendingPathComponent("tiers.yaml")
        let text = try String(contentsOf: tiers, encoding: .utf8)
        try #require(text.contains("tiers: [pro, academic, team]"))
        try Data(text.replacingOccurrences(of: "tiers: [pro, academic, team]", with: "tiers: [free, pro, academic, team]").utf8).write(to: tiers)
        let t = try TestServer {
            $0.shadow = candidate.path
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken)
        }
        try await t.app.test(.router) { client in
            let request = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
            for _ in 0..<3 {
                try await client.execute(uri: "/v1/decide", method: .post, body: body(request)) { r in
                    #expect(r.object["reason"] as? String == "requires_upgrade")  // the live answer
                }
            }
            try await client.execute(uri: "/v1/operator/shadow", method: .get, headers: bearer(Self.operatorToken)) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect(r.object["decisions"] as? Int == 3 && r.object["disagreements"] as? Int == 3)
                let by = try #require(r.object["byAction"] as? [[String: Any]])
                #expect(by.first?["action"] as? String == "ai_suggestions" && by.first?["shadow"] as? String == "allowed")
                let samples = try #require(r.object["samples"] as? [[String: Any]])
                #expect(!samples.isEmpty && !r.text.contains("\"u1\""))
            }
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(r.text.contains(#"gatehouse_shadow_decisions_total{action="ai_suggestions",live="requires_upgrade",shadow="allowed"} 3"#), "\(r.text)")
            }
        }
    }

    /// Issue 37's check, on both stores: the same traffic is recorded and shadowed; the records, exported as NDJSON,
    /// replay under the serving policy with zero flips, and under the candidate with exactly the shadow's
    /// disagreements, action by action and reason by reason; and what the candidate changes (the free tier's sources
    /// limit 50 -> 40, AI suggestions for free) matches a count made here without the engine.
    @Test(arguments: await SharedStore.runnable)
    func shadowCountsEqualReplayCountsOnTheSameTraffic(store: SharedStore) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-shadow-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let candidate = dir.appendingPathComponent("candidate")
        try FileManager.default.copyItem(at: TestServer.root.appendingPathComponent("policies/research-crawler"), to: candidate)
        let tiersFile = candidate.appendingPathComponent("tiers.yaml")
        let text = try String(contentsOf: tiersFile, encoding: .utf8)
        try #require(text.contains("free: 50") && text.contains("    name: AI Suggestions\n    tiers: [pro, academic, team]"))
        try Data(
            text.replacingOccurrences(of: "free: 50", with: "free: 40")
                .replacingOccurrences(
                    of: "    name: AI Suggestions\n    tiers: [pro, academic, team]", with: "    name: AI Suggestions\n    tiers: [free, pro, academic, team]"
                ).utf8
        ).write(to: tiersFile)
        let database = try await SharedDatabase.make(store, in: dir)
        defer { Task { await database.drop() } }
        let t = try TestServer {
            $0.database = database.served
            $0.decisionLog = .all
            $0.decisionLogLimit = RateLimit(requests: 1_000_000, window: 60)
            $0.shadow = candidate.path
            $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: Self.operatorToken)
        }
        let tiers = ["free", "pro", "team"]
        let actions = ["add_source", "ai_suggestions", "cloud_sync"]
        let requests: [(tier: String, action: String, sources: Int)] = (0..<360).map { i in (tiers[i % 3], actions[(i / 3) % 3], (i * 7) % 60) }
        // The disagreements predicted without the engine: free add_source at 40-49 sources, free ai_suggestions.
        let predicted = (
            limit: requests.filter { $0.tier == "free" && $0.action == "add_source" && (40..<50).contains($0.sources) }.count,
            gate: requests.filter { $0.tier == "free" && $0.action == "ai_suggestions" }.count)
        try #require(predicted.limit > 0 && predicted.gate > 0)
        try await Self.withStoreRunning(t.server.store) {
          try await t.app.test(.router) { client in
            for (i, r) in requests.enumerated() {
                let json = #"{"subject": {"id": "user-\#(i % 40)", "tier": "\#(r.tier)"}, "action": "\#(r.action)", "resource": {"type": "app", "usage": {"sources": \#(r.sources)}}}"#
                try await client.execute(uri: "/v1/decide", method: .post, body: body(json)) { answer in #expect(answer.status == .ok) }
            }
            let op = bearer(Self.operatorToken)
            let shadow: [String: Int] = try await client.execute(uri: "/v1/operator/shadow", method: .get, headers: op) { r in
                #expect(r.object["decisions"] as? Int == requests.count, "\(r.text)")
                var counts: [String: Int] = [:]
                for row in try #require(r.object["byAction"] as? [[String: Any]], "\(r.text)") {
                    let key = "\(row["action"] ?? "") \(row["live"] ?? "") \(row["shadow"] ?? "")"
                    counts[key, default: 0] += try #require(row["count"] as? Int, "\(row)")
                }
                return counts
            }
            var lines: [Substring] = []
            var cursor: String?
            repeat {
                let uri = "/v1/operator/decisions?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")
                cursor = try await client.execute(uri: uri, method: .get, headers: op.merging([.accept: "application/x-ndjson"])) { r in
                    #expect(r.status == .ok, "\(r.text)")
                    lines += r.text.split(separator: "\n")
                    return r.headers[HTTPField.Name("Gatehouse-Next-Cursor")!]
                }
            } while cursor != nil
            #expect(t.server.service.recorder.counts.dropped == 0)
            #expect(lines.count == requests.count)
            let same = DecisionReplay.replay(lines: lines, candidate: t.server.service.policy, base: nil)
            #expect(same.replayed == requests.count && same.unreadableCount == 0 && same.totalFlips == 0)
            let candidatePolicy = try #require(PolicyCompiler.load(directory: candidate.path).policy)
            let changed = DecisionReplay.replay(lines: lines, candidate: candidatePolicy, base: nil)
            var replayed: [String: Int] = [:]
            for group in changed.groups { replayed["\(group.action) \(group.from.rawValue) \(group.to.rawValue)", default: 0] += group.count }
            #expect(replayed == shadow.filter { key, _ in
                let parts = key.split(separator: " ")
                return parts[1] != parts[2]
            })
            #expect(replayed == ["add_source allowed limit_exceeded": predicted.limit, "ai_suggestions requires_upgrade allowed": predicted.gate])
          }
        }
    }

    /// Issue 37's queue on PostgreSQL: while another session holds an exclusive lock on the decision log (a stalled
    /// store), every decision is answered and the lock is still held when the last answer arrives, so no answer waited
    /// for the store; once the lock goes, what was queued is written (or, when a batch gave up on the lock, counted).
    @Test(.enabled(if: TestPostgres.url != nil, "GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func aStalledPostgreSQLStoreNeverDelaysADecision() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-stalled-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let database = try await SharedDatabase.make(.postgres, in: dir)
        defer { Task { await database.drop() } }
        let t = try TestServer {
            $0.database = database.served
            $0.decisionLog = .all
            $0.decisionLogLimit = RateLimit(requests: 1_000_000, window: 60)
        }
        let recorder = t.server.service.recorder
        @Sendable func decide(_ client: some TestClientProtocol, _ i: Int) async throws {
            let json = #"{"subject": {"id": "user-\#(i)", "tier": "free"}, "action": "add_source", "resource": {"type": "app", "usage": {"sources": \#(i % 60)}}}"#
            try await client.execute(uri: "/v1/decide", method: .post, body: body(json)) { r in #expect(r.status == .ok) }
        }
        try await Self.withStoreRunning(t.server.store) {
            try await t.app.test(.router) { client in
                // One record first: the pseudonym key is read and the table exists before the stall.
                try await decide(client, 0)
                await recorder.flush()
                #expect(recorder.counts.written == 1)
                let lock = try await LockHolder.take(url: database.location, table: "decisionLog")
                for i in 1...200 { try await decide(client, i) }
                let held = try await offThePool(
                    URL(fileURLWithPath: TestPostgres.psql),
                    [database.location, "-tA", "-c", #"SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = '"decisionLog"'::regclass"#])
                #expect(held.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "the lock was gone before the last answer")
                #expect(recorder.counts.written == 1)
                await lock.stop()
                // The backend outlives its psql inside pg_sleep: end it, so the lock goes now, not in 60 s.
                _ = try await offThePool(
                    URL(fileURLWithPath: TestPostgres.psql),
                    [database.location, "-tA", "-c", #"SELECT pg_terminate_backend(pid) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = '"decisionLog"'::regclass"#])
                await recorder.flush()
                let counts = recorder.counts
                #expect(counts.written + counts.dropped == 201, "\(counts)")
                let rows = try await offThePool(
                    URL(fileURLWithPath: TestPostgres.psql), [database.location, "-tA", "-c", #"SELECT count(*) FROM "decisionLog""#])
                #expect(Int(rows.trimmingCharacters(in: .whitespacesAndNewlines)) == counts.written)
            }
        }
    }

    /// Runs `body` with `store` answering: on PostgreSQL its pool runs, and the schema is migrated, for the body's
    /// duration (as `policy serve` runs them; a `.router` test runs no service). SQLite needs nothing.
    static func withStoreRunning<T>(_ store: OpenedIdentityStore, _ body: () async throws -> T) async throws -> T {
        guard let pool = store.service else { return try await body() }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.run() }
            defer { group.cancelAll() }
            try await store.prepare()
            return try await body()
        }
    }
}
