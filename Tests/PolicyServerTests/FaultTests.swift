import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing

#if canImport(Glibc)
import Glibc
import GatehouseTestSupport
#endif

/// Faults on a real loopback port, each bounded in time and requests, each ending with the server (or its
/// restart) still serving: a client that trickles, a body past the limit, a database that refuses writes,
/// SIGKILL in the middle of writes, SIGTERM with requests in flight.
@Suite(.startsServers) struct FaultTests {
    static let freeAI = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#

    /// Sends `bytes` one at a time, `every` milliseconds apart, looking for an answer before each byte; returns
    /// how many were sent before the server answered or closed, and the answer (nil if it never came).
    static func trickle(_ port: Int, _ bytes: [UInt8], every milliseconds: Int32) throws -> (sent: Int, answer: RawConnection.Answer?) {
        let connection = try RawConnection(port: port)
        for (i, byte) in bytes.enumerated() {
            if connection.readable(within: milliseconds) { return (i, try connection.answer(within: 5)) }
            do { try connection.send([byte]) } catch { return (i, try connection.answer(within: 5)) }
        }
        return (bytes.count, try connection.answer(within: 1))
    }

    /// The `gatehouse_read_timeouts_total` line of `/metrics`, nil when it is missing.
    static func readTimeouts(_ client: some TestClientProtocol) async throws -> String? {
        try await client.execute(uri: "/metrics", method: .get) { r in
            r.text.split(separator: "\n").first { $0.hasPrefix("gatehouse_read_timeouts_total ") }.map(String.init)
        }
    }

    /// A header or a body sent one byte every 50 ms is never idle for long (the idle timeout is 30 s), yet the
    /// read deadline (0.6 s here) cuts it off with 408 long before its end, and `/metrics` counts both cuts;
    /// the server serves on.
    @Test func aClientThatTricklesIsCutOffAtTheReadDeadline() async throws {
        let t = try TestServer { $0.readTimeout = .milliseconds(600) }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            #expect(try await Self.readTimeouts(client) == "gatehouse_read_timeouts_total 0")
            // 200 bytes at 50 ms would take 10 s: a cut after a few dozen bytes is the deadline's doing.
            let header = Array(("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 160) + "\r\n\r\n").utf8)
            let (headerSent, headerAnswer) = try await onThread { try Self.trickle(port, header, every: 50) }
            #expect(headerSent < header.count / 2, "sent \(headerSent) of \(header.count) header bytes")
            #expect(headerAnswer?.status == 408)
            #expect(headerAnswer?.object["code"] as? String == "read_timeout")

            let head = "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
            let slowBody = Array(Self.freeAI.utf8) + Array(repeating: UInt8(ascii: " "), count: 200 - Self.freeAI.utf8.count)
            let (bodySent, bodyAnswer) = try await onThread { () throws -> (Int, RawConnection.Answer?) in
                let connection = try RawConnection(port: port)
                try connection.send(head)
                for (i, byte) in slowBody.enumerated() {
                    if connection.readable(within: 50) { return (i, try connection.answer(within: 5)) }
                    do { try connection.send([byte]) } catch { return (i, try connection.answer(within: 5)) }
                }
                return (slowBody.count, try connection.answer(within: 1))
            }
            #expect(bodySent < slowBody.count / 2, "sent \(bodySent) of \(slowBody.count) body bytes")
            #expect(bodyAnswer?.status == 408)
            #expect(try await Self.readTimeouts(client) == "gatehouse_read_timeouts_total 2")

            // A client that sends its request at once is not affected, and the server still serves.
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in #expect(r.status == .ok) }
            let quick = try await onThread { try RawConnection.exchange(port: port, "POST", "/v1/decide", body: Self.freeAI, seconds: 10) }
            #expect(quick?.status == 200)
        }
    }

    /// A body past the limit is answered 413 while most of it is still unsent: a declared Content-Length over
    /// the limit after its first part, and a chunked body as soon as its chunks pass the limit.
    @Test func aBodyPastTheLimitIsAnswered413BeforeTheRestIsSent() async throws {
        let t = try TestServer { $0.bodyLimit = 1024 }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let declared = try await onThread { () throws -> RawConnection.Answer? in
                let connection = try RawConnection(port: port)
                try connection.send(
                    "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
                try connection.send(Array(repeating: UInt8(ascii: " "), count: 512))
                return try connection.answer(within: 10)  // nothing more is sent: the answer must not wait for the rest
            }
            #expect(declared?.status == 413)
            #expect(declared?.object["code"] as? String == "body_too_large")

            let streamed = try await onThread { () throws -> RawConnection.Answer? in
                let connection = try RawConnection(port: port)
                try connection.send("POST /v1/decide/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = String(repeating: " ", count: 512)
                for _ in 0..<3 { try connection.send("200\r\n" + chunk + "\r\n") }  // 1,536 bytes, past the 1,024 limit
                return try connection.answer(within: 10)  // the last chunk is never sent
            }
            #expect(streamed?.status == 413)
            #expect(streamed?.object["code"] as? String == "body_too_large")

            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in #expect(r.status == .ok) }
        }
    }

    /// A database that refuses writes (a read-only open: SQLite's `query_only` on the writer connection gives
    /// the SQLITE_READONLY a read-only file gives; chmod cannot show it here, the tests run as root and an open
    /// file keeps its access): writes answer 503 `storage` with no SQL or value in the body, decisions without a
    /// bearer (and with one: reads) go on, `/readyz` says so; once writable again, all is back.
    @Test func aReadOnlyDatabaseRefusesWritesClearlyAndDecisionsGoOn() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let user = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                #expect(r.status == .created)
                return try #require(r.object["accessToken"] as? String)
            }
            try await t.server.store.sqlite!.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }

            try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.object["code"] as? String == "storage")
                for leak in ["INSERT", "UPDATE", "SELECT", "session", "readonly database"] { #expect(!r.text.contains(leak), "\(leak) in \(r.text)") }
            }
            try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(user), body: body(#"{"name": "Casa"}"#)) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(!r.text.contains("Casa"))
            }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in
                #expect(r.status == .ok)
                #expect(r.object["reason"] as? String == "requires_upgrade")
            }
            try await client.execute(
                uri: "/v1/decide", method: .post, headers: bearer(user), body: body(#"{"action": "ai_suggestions", "resource": {"type": "app"}}"#)
            ) { r in
                #expect(r.status == .ok)
                #expect(r.object["decision"] as? String == "deny")
            }
            try await client.execute(uri: "/readyz", method: .get) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(r.object["code"] as? String == "not_ready")
                #expect((r.object["detail"] as? String)?.contains("refuses writes") == true)
            }

            try await t.server.store.sqlite!.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
            try await client.execute(uri: "/readyz", method: .get) { r in #expect(r.status == .ok) }
            try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in #expect(r.status == .created) }
        }
    }

    /// SIGKILL while eight clients create spaces and count usage as fast as they can: after a restart on the
    /// same file, every write that was answered 2xx is there (a write may also be there unanswered).
    @Test func sigkillInTheMiddleOfWritesLosesNoAcknowledgedWrite() async throws {
        let t = try TestServer(policySet: "contacasal")
        let database = t.dir.appendingPathComponent("killed.sqlite").path
        let operatorToken = "operator-" + UUID().uuidString
        let arguments = ["--policies", t.policies.path, "--database", database]
        let environment = ["GATEHOUSE_OPERATOR_TOKEN": operatorToken]
        let (first, url) = try await ServedProcess.start(arguments, environment: environment)
        defer { first.kill() }
        let port = try #require(url.port)
        let signIn = try #require(try await onThread { try RawConnection.exchange(port: port, "POST", "/v1/auth/anonymous") })
        let token = try #require(signIn.object["accessToken"] as? String)
        let userId = try #require(signIn.object["userId"] as? String)

        final class Acknowledged: @unchecked Sendable {
            let lock = NSLock()
            var spaces: [String] = []
            var highestCount = 0
            var stop = false
        }
        let acked = Acknowledged()
        let workers = (0..<8).map { worker in
            Task.detached {
                try await onThread {
                    for i in 0..<2_000 where !acked.lock.withLock({ acked.stop }) {
                        if worker < 6 {
                            let answer = try? RawConnection.exchange(
                                port: port, "POST", "/v1/spaces", body: #"{"name": "space \#(worker)-\#(i)"}"#, headers: ["Authorization": "Bearer \(token)"],
                                seconds: 10)
                            guard let answer else { return }
                            if answer.status == 201, let id = answer.object["resourceId"] as? String { acked.lock.withLock { acked.spaces.append(id) } }
                        } else {
                            let answer = try? RawConnection.exchange(
                                port: port, "POST", "/v1/operator/users/\(userId)/usage", body: #"{"counter": "sources"}"#,
                                headers: ["Authorization": "Bearer \(operatorToken)"], seconds: 10)
                            guard let answer else { return }
                            if answer.status == 200, let value = answer.object["value"] as? Int {
                                acked.lock.withLock { acked.highestCount = max(acked.highestCount, value) }
                            }
                        }
                    }
                }
            }
        }
        // Kill once a good number of writes were answered (bounded wait), with the clients still writing.
        for _ in 0..<600 where acked.lock.withLock({ acked.spaces.count < 60 || acked.highestCount < 20 }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        first.kill()
        acked.lock.withLock { acked.stop = true }
        for worker in workers { try await worker.value }
        #expect(await first.wait(within: .seconds(60)) == .signaled(SIGKILL))
        let (spaces, highest) = acked.lock.withLock { (acked.spaces, acked.highestCount) }
        #expect(spaces.count >= 60 && highest >= 20, "only \(spaces.count) spaces and \(highest) counts were answered before the kill")

        let (second, url2) = try await ServedProcess.start(arguments, environment: environment)
        defer { second.kill() }
        let port2 = try #require(url2.port)
        let export = try #require(
            try await onThread { try RawConnection.exchange(port: port2, "GET", "/v1/me/export", headers: ["Authorization": "Bearer \(token)"]) })
        #expect(export.status == 200, "the session survived the kill")
        let memberships = (export.object["memberships"] as? [[String: Any]]) ?? []
        let stored = Set(memberships.compactMap { $0["resourceId"] as? String })
        let lost = spaces.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "\(lost.count) of \(spaces.count) acknowledged spaces are gone")
        let count = try #require(
            try await onThread {
                try RawConnection.exchange(
                    port: port2, "POST", "/v1/operator/users/\(userId)/usage", body: #"{"counter": "sources", "by": 0}"#,
                    headers: ["Authorization": "Bearer \(operatorToken)"])
            })
        #expect(count.status == 200)
        #expect((count.object["value"] as? Int ?? -1) >= highest, "counter \(count.body) below the acknowledged \(highest)")
        try await ServedProcess.stop(second)
    }

    /// SIGTERM while PIN sign-ins (a production-strength KDF each) are in flight: they all finish with their
    /// token pairs after the signal, a new connection is refused meanwhile, and the process exits 0.
    @Test func sigtermLetsRequestsInFlightFinishAndRefusesNewOnes() async throws {
        let t = try TestServer(policySet: "contacasal")
        let arguments = ["--policies", t.policies.path, "--database", t.dir.appendingPathComponent("term.sqlite").path]
        let (process, url) = try await ServedProcess.start(arguments)
        defer { process.kill() }
        let port = try #require(url.port)
        // Four users (parallel sign-ins of one user count as pending guesses and are throttled, by design).
        let users = (0..<4).map { #"{"username": "user\#($0)", "pin": "4172"}"# }
        for user in users {
            let registered = try await onThread { try RawConnection.exchange(port: port, "POST", "/v1/auth/pin/register", body: user, seconds: 60) }
            try #require(registered?.status == 201, "\(registered?.body ?? "no answer")")
        }

        // Four sign-ins sent whole, then the signal (the sign-in limit allows ten a minute per address).
        let connections = try (0..<4).map { _ in try RawConnection(port: port) }
        for (connection, user) in zip(connections, users) {
            try connection.send(RawConnection.request("POST", "/v1/auth/pin/signin", body: user))
        }
        try await Task.sleep(for: .milliseconds(100))
        let signalled = Date()
        process.signal(SIGTERM)

        // A new connection is refused once the listener has closed (bounded wait: 60 s). The KDFs hold the
        // cooperative threads, so the shutdown itself may start only when one of them is done.
        // Both watched at once, so each time is when it happened, not when it was looked at.
        async let refusal = onThread { () -> Date? in
            for _ in 0..<3_000 {
                do {
                    _ = try RawConnection(port: port)
                } catch let failure as RawConnection.Failure where failure.code == ECONNREFUSED || failure.code == ECONNRESET {
                    // Refused, or reset: a connect that reached the listener's backlog as it closed is reset rather
                    // than refused (seen once in CI on a slow machine, 2026-11-29); either way it is not served.
                    return Date()
                }
                usleep(20_000)
            }
            return nil
        }
        async let answered = withThrowingTaskGroup(of: (RawConnection.Answer?, Date).self) { group in
            for connection in connections { group.addTask { try await onThread { (try connection.answer(within: 120), Date()) } } }
            var all: [(RawConnection.Answer?, Date)] = []
            for try await answer in group { all.append(answer) }
            return all
        }
        let (refusedAt, answers) = try await (refusal, answered)
        for (answer, at) in answers {
            #expect(answer?.status == 200, "an in-flight sign-in answered \(answer?.status ?? 0): \(answer?.body ?? "nothing")")
            #expect(answer?.object["accessToken"] is String)
            #expect(at > signalled, "answered before the signal: the request was not in flight")
        }
        let refused = try #require(refusedAt, "new connections were still accepted")
        #expect(answers.contains { $0.1 > refused }, "no sign-in was still in flight when the new connection was refused")
        let ended = await process.wait(within: .seconds(20))
        #expect(ended != nil)
        if let ended { #expect(ended == .exited(0)) }
    }
}
