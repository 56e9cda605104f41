import Foundation
import Hummingbird
import HummingbirdTesting
@testable import PolicyServer
import Testing

/// The decide road ahead of the router (`DecideAhead`, issue 41 item 1) answers what the router would, byte for byte:
/// the same requests, good and bad, whole, split and pipelined, go to a server with it and one without
/// (`ServerSettings.decideAhead`), and every answer must match but for its `Date`. The road must also be taken where it
/// should (or the comparison proves nothing), and leave the connection's idle timeout and the decision log as they were.
@Suite(.startsServers) struct DecideAheadTests {
    static let freeAI = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let proAI = #"{"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let capped = #"{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}"#

    static func post(_ body: String, path: String = "/v1/decide", headers: [String] = ["Content-Type: application/json"], length: Int? = nil)
        -> String
    {
        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(length ?? body.utf8.count)\r\n\r\n\(body)"
    }

    static let close = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"

    /// What each case sends, as writes 150 ms apart, ending with a request that closes; and how many of its requests the
    /// road answers. Where that turns on how the server's reads fall (a write is one read on loopback, but a busy server
    /// may read two writes at once, and a split request read whole is then the road's), the count is a range.
    static let cases: [(name: String, writes: [String], ahead: ClosedRange<Int>)] = [
        ("one allow and one deny", [post(proAI) + post(freeAI) + close], 2...2),
        ("a capped action's counts", [post(capped) + close], 1...1),
        ("decisions in separate writes", [post(freeAI), post(proAI), close], 2...2),
        ("a body split over two writes", [String(post(proAI).dropLast(20)), String(post(proAI).suffix(20)) + close], 0...1),
        ("a head alone, then its body", [post(proAI).replacingOccurrences(of: proAI, with: ""), proAI + close], 0...1),
        ("pipelined behind a router request", [post(freeAI) + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + post(proAI) + close], 1...2),
        ("a body that is not JSON", [post("{\"subject\": ") + close], 0...0),
        ("an unknown field", [post(#"{"action": "ai_suggestions", "resource": {"type": "app"}, "extra": 1}"#) + close], 0...0),
        ("JSON with a charset", [post(proAI, headers: ["Content-Type: application/json; charset=utf-8"]) + close], 0...0),
        ("not JSON at all", [post(proAI, headers: ["Content-Type: text/plain"]) + close], 0...0),
        ("no Content-Type", [post(proAI, headers: []) + close], 0...0),
        ("a bearer", [post(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#, headers: ["Content-Type: application/json", "Authorization: Bearer nope"]) + close], 0...0),
        ("a query", [post(proAI, path: "/v1/decide?x=1") + close], 0...0),
        ("a trailing slash", [post(proAI, path: "/v1/decide/") + close], 0...0),
        ("the batch route", [post(#"{"requests": [\#(proAI)]}"#, path: "/v1/decide/batch") + close], 0...0),
        ("Connection: keep-alive", [post(proAI, headers: ["Content-Type: application/json", "Connection: keep-alive"]) + close], 0...0),
        ("two Content-Types", [post(proAI, headers: ["Content-Type: application/json", "Content-Type: application/json"]) + close], 0...0),
        ("an empty body", [post("") + close], 0...0),
        ("HTTP/1.0", [post(proAI).replacingOccurrences(of: "HTTP/1.1", with: "HTTP/1.0") + close], 1...1),
        ("GET on the decide path", ["GET /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + close], 0...0),
    ]

    /// Every case's bytes from `port`, the `Date` lines taken out.
    static func answers(_ port: Int) throws -> [String] {
        try cases.map { item in
            let connection = try RawConnection(port: port)
            for (i, write) in item.writes.enumerated() {
                if i > 0 { usleep(150_000) }
                try connection.send(write)
            }
            let text = String(decoding: try connection.everything(within: 30), as: UTF8.self)
            return text.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("Date: ") }.joined(separator: "\r\n")
        }
    }

    @Test func theRoadAheadAnswersWhatTheRouterAnswers() async throws {
        let ahead = try TestServer()
        let router = try TestServer { $0.decideAhead = false }
        let taken = try await ahead.app.test(.live) { client in
            let port = try #require(client.port)
            return try await onThread { () throws -> [(String, Int)] in
                try Self.cases.map { item in
                    let before = ahead.server.metrics.answeredAhead.load(ordering: .relaxed)
                    let connection = try RawConnection(port: port)
                    for (i, write) in item.writes.enumerated() {
                        if i > 0 { usleep(150_000) }
                        try connection.send(write)
                    }
                    _ = try connection.everything(within: 30)
                    return (item.name, ahead.server.metrics.answeredAhead.load(ordering: .relaxed) - before)
                }
            }
        }
        for (item, (name, count)) in zip(Self.cases, taken) {
            #expect(item.ahead.contains(count), "\(name): \(count) answered ahead, \(item.ahead) expected")
        }
        let withRoad = try await ahead.app.test(.live) { client in
            let port = try #require(client.port)
            return try await onThread { try Self.answers(port) }
        }
        let withoutRoad = try await router.app.test(.live) { client in
            let port = try #require(client.port)
            return try await onThread { try Self.answers(port) }
        }
        #expect(router.server.metrics.answeredAhead.load(ordering: .relaxed) == 0)
        for (item, (one, other)) in zip(Self.cases, zip(withRoad, withoutRoad)) {
            #expect(one == other, "\(item.name)")
            #expect(one.hasPrefix("HTTP/1.1 "), "\(item.name): \(one)")
        }
        // The answers are the route's: a decision, its policy header, its length.
        #expect(withRoad[0].contains("Gatehouse-Policy: "))
        #expect(withRoad[0].contains(#""decision":"allow""#) && withRoad[0].contains(#""decision":"deny""#))
        #expect(withRoad[1].contains(#""remaining":1"#))
    }

    /// A bearer's decision is taken ahead only once its session, and the resource the decision reads, are in the
    /// decision cache; it answers what the router answers; and the moment the session ends (sign-out drops its cache
    /// entry) the router answers again, refusing the token. A bearer beside a named subject, an Authorization that is
    /// not a bearer and two Authorization headers are the router's too. Run against a server with the road and one
    /// without; every answer compared but for its `Date`, and the count taken ahead checked after each step.
    @Test func aBearersDecisionIsTakenAheadOnlyWhileItsSessionIsCached() async throws {
        let app = #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#
        let project = #"{"action": "view", "resource": {"type": "project", "id": "p-nobody-made"}}"#
        let named = #"{"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
        // (what is sent, given the access token; how many more the road answers after it)
        let steps: [(name: String, request: @Sendable (String) -> String, ahead: Int)] = [
            ("the session's first decision (read from the store)", { Self.post(app, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 0),
            ("the same, the session cached", { Self.post(app, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 1),
            ("a lowercase scheme and blanks around the token", { Self.post(app, headers: Self.json + ["Authorization: bearer  \($0)\t"]) }, 1),
            ("a project, first (its facts read from the store)", { Self.post(project, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 0),
            ("the project again, both cached", { Self.post(project, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 1),
            ("a bearer beside a named subject", { Self.post(named, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 0),
            ("not a bearer", { _ in Self.post(app, headers: Self.json + ["Authorization: Basic dTpw"]) }, 0),
            ("two Authorization headers", { Self.post(app, headers: Self.json + ["Authorization: Bearer \($0)", "Authorization: Bearer \($0)"]) }, 0),
            ("sign-out", { "POST /v1/auth/signout HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \($0)\r\nContent-Length: 0\r\n\r\n" }, 0),
            ("the app after sign-out (refused)", { Self.post(app, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 0),
            ("the project after sign-out (refused)", { Self.post(project, headers: Self.json + ["Authorization: Bearer \($0)"]) }, 0),
        ]
        func run(_ t: TestServer) async throws -> [(answer: String, ahead: Int)] {
            try await t.app.test(.live) { client in
                let port = try #require(client.port)
                let user = try await client.execute(uri: "/v1/auth/pin/register", method: .post, body: body(#"{"username": "reader", "pin": "4826"}"#)) { $0.object }
                let access = try #require(user["accessToken"] as? String)
                return try await onThread { () throws -> [(String, Int)] in
                    let connection = try RawConnection(port: port)
                    return try steps.map { step in
                        let before = t.server.metrics.answeredAhead.load(ordering: .relaxed)
                        try connection.send(step.request(access))
                        // Not `#require`: on this thread an expectation is not the test's, and a throw would pass.
                        guard let answer = try connection.answer(within: 30) else { return ("\(step.name): no answer", -1) }
                        let headers = answer.headers.filter { $0.key.lowercased() != "date" }.sorted { $0.key < $1.key }
                        let text = "\(answer.status) \(headers.map { "\($0.key): \($0.value)" }.joined(separator: "; ")) \(answer.body)"
                        return (text, t.server.metrics.answeredAhead.load(ordering: .relaxed) - before)
                    }
                }
            }
        }
        let withRoad = try await run(TestServer())
        let withoutRoad = try await run(TestServer { $0.decideAhead = false })
        for (step, (one, other)) in zip(steps, zip(withRoad, withoutRoad)) {
            #expect(one.ahead == step.ahead, "\(step.name): \(one.ahead) answered ahead, \(step.ahead) expected")
            #expect(other.ahead == 0)
            #expect(one.answer == other.answer, "\(step.name)")
        }
        #expect(withRoad[1].answer.hasPrefix("200 ") && withRoad[1].answer.contains(#""decision":"deny""#), "\(withRoad[1].answer)")
        #expect(!withRoad[1].answer.contains("invalid_token"))
        #expect(withRoad[4].answer.hasPrefix("200 "), "\(withRoad[4].answer)")
        #expect(withRoad[5].answer.hasPrefix("400 "), "\(withRoad[5].answer)")
        #expect(withRoad[6].answer.hasPrefix("401 "), "\(withRoad[6].answer)")
        for refused in withRoad[9...10] {
            #expect(refused.answer.hasPrefix("200 ") && refused.answer.contains("invalid_token"), "\(refused.answer)")
        }
    }

    static let json = ["Content-Type: application/json"]

    /// A caller-named subject on a server that does not trust callers is refused on the router's road, as before.
    @Test func anUntrustedCallerSubjectIsTheRoutersToRefuse() async throws {
        let ahead = try TestServer { $0.trustCallerSubjects = false }
        let router = try TestServer { $0.trustCallerSubjects = false; $0.decideAhead = false }
        var texts: [String] = []
        for t in [ahead, router] {
            texts.append(try await t.app.test(.live) { client in
                let port = try #require(client.port)
                return try await onThread { try Self.answers(port)[0] }
            })
        }
        #expect(texts[0] == texts[1])
        #expect(texts[0].hasPrefix("HTTP/1.1 4"), "\(texts[0])")
        #expect(ahead.server.metrics.answeredAhead.load(ordering: .relaxed) == 0)
    }

    /// Hummingbird's idle timeout counts this road's requests: a connection asking a decision every 250 ms for twice
    /// the timeout stays open, and closes once it falls silent.
    @Test func aConnectionBusyWithDecisionsIsNotIdle() async throws {
        let t = try TestServer { $0.idleTimeout = .seconds(1) }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let (statuses, closedWhenSilent) = try await onThread { () throws -> ([Int?], Bool) in
                let connection = try RawConnection(port: port)
                var statuses: [Int?] = []
                for _ in 0..<8 {
                    try connection.send(Self.post(Self.proAI))
                    statuses.append(try connection.answer(within: 10)?.status)
                    usleep(250_000)
                }
                // Silent now: the server closes within its timeout (and a little more), well before `everything` gives up.
                let silent = Date()
                let rest = try connection.everything(within: 8)
                return (statuses, rest.isEmpty && Date().timeIntervalSince(silent) < 6)
            }
            #expect(statuses == Array(repeating: 200, count: 8))
            #expect(closedWhenSilent)
        }
        #expect(t.server.metrics.answeredAhead.load(ordering: .relaxed) == 8)
    }

    /// The road's decisions are recorded in the decision log as the route's are.
    @Test func theRoadsDecisionsAreRecorded() async throws {
        let t = try TestServer { $0.decisionLog = .all }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            _ = try await onThread { () throws -> [UInt8] in
                let connection = try RawConnection(port: port)
                try connection.send(Self.post(Self.proAI) + Self.post(Self.freeAI) + Self.post(Self.capped) + Self.close)
                return try connection.everything(within: 30)
            }
        }
        let recorder = t.server.service.recorder
        await recorder.flush()
        #expect(t.server.metrics.answeredAhead.load(ordering: .relaxed) == 3)
        #expect(recorder.counts.written == 3, "\(recorder.counts)")
    }

    /// Behind a trusted proxy the decision log's per-client quota goes by the `X-Forwarded-For` client on both roads:
    /// two clients of two records each through one proxy connection get four records, not two.
    @Test(arguments: [true, false]) func behindAProxyTheLogsClientIsTheForwardedOne(ahead: Bool) async throws {
        let t = try TestServer {
            $0.decideAhead = ahead
            $0.trustedProxies = ["127.0.0.1"]
            $0.decisionLog = .all
            $0.decisionLogLimit = RateLimit(requests: 2, window: 60)
        }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            _ = try await onThread { () throws -> [UInt8] in
                let connection = try RawConnection(port: port)
                var text = ""
                for (i, forwarded) in ["10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2", "10.0.0.2"].enumerated() {
                    let body = #"{"subject": {"id": "user-\#(i)", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
                    text += Self.post(body, headers: ["Content-Type: application/json", "X-Forwarded-For: \(forwarded)"])
                }
                try connection.send(text + Self.close)
                return try connection.everything(within: 30)
            }
        }
        let recorder = t.server.service.recorder
        await recorder.flush()
        #expect(t.server.metrics.answeredAhead.load(ordering: .relaxed) == (ahead ? 6 : 0))
        #expect(recorder.counts.written == 4, "\(recorder.counts)")
    }
}
