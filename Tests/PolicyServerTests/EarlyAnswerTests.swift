import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// Item 8 (issue 36): an answer the server gives before it has read the request's body (auth first, a body too
/// large, a media type it refuses, a limit) must not poison the connection: either the body is read and the next
/// request on the connection is served, or the answer says `Connection: close` and the connection is closed.
@Suite(.startsServers) struct EarlyAnswerTests {
    /// One request's head sent alone on a keep-alive connection; its answer read; then its body and, unless the
    /// answer said `Connection: close`, a `GET /healthz` on the same connection. Returns the first answer and
    /// whether the connection was then handled honestly (closed as announced, or the next request answered 200).
    static func earlyAnswer(port: Int, head: String, body: String) throws -> (first: RawConnection.Answer?, honest: Bool, detail: String) {
        let connection = try RawConnection(port: port)
        try connection.send(head)
        guard let first = try connection.answer(within: 30) else { return (nil, false, "no answer to the head alone") }
        if first.headers["connection"]?.lowercased() == "close" {
            // Told to close: the client sends nothing more and the server ends the connection.
            return (first, connection.closedByPeer(within: 30), "announced close, connection left open")
        }
        // Kept alive: the client sends the body it declared, then its next request.
        do {
            try connection.send(body)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        } catch { return (first, false, "keep-alive answer, then the connection failed: \(error)") }
        let second = try connection.answer(within: 30)
        return (first, second?.status == 200, "keep-alive answer, next request got \(second.map { "\($0.status)" } ?? "nothing")")
    }

    static func head(_ method: String, _ path: String, length: Int, contentType: String = "application/json", extra: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(contentType)\r\nContent-Length: \(length)\r\n\(extra)\r\n"
    }

    @Test func aBearerlessWriteAnswered401LeavesTheConnectionUsable() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let body = #"{"name": "Casa"}"#
            let result = try await onThread { try Self.earlyAnswer(port: port, head: Self.head("POST", "/v1/spaces", length: body.utf8.count), body: body) }
            #expect(result.first?.status == 401)
            #expect(result.honest, "\(result.detail)")
        }
    }

    @Test func aRefusedMediaTypeAnswered415LeavesTheConnectionUsable() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let body = "action=ai_suggestions"
            let result = try await onThread {
                try Self.earlyAnswer(port: port, head: Self.head("POST", "/v1/decide", length: body.utf8.count, contentType: "text/plain"), body: body)
            }
            #expect(result.first?.status == 415)
            #expect(result.honest, "\(result.detail)")
        }
    }

    @Test func aDeclaredBodyPastTheLimitAnswered413LeavesTheConnectionUsable() async throws {
        let t = try TestServer { $0.bodyLimit = 1024 }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let body = String(repeating: " ", count: 4096)
            let result = try await onThread { try Self.earlyAnswer(port: port, head: Self.head("POST", "/v1/decide", length: body.utf8.count), body: body) }
            #expect(result.first?.status == 413)
            #expect(result.honest, "\(result.detail)")
        }
    }

    /// Past the small rest the server reads to keep the connection (`drainBytes`), the early answer says
    /// `Connection: close` and the connection ends once the answer is read.
    @Test func aLargeDeclaredBodyAnsweredEarlyIsToldToClose() async throws {
        let t = try TestServer { $0.bodyLimit = 1024 }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let first = try await onThread { () throws -> (RawConnection.Answer?, Bool) in
                let connection = try RawConnection(port: port)
                try connection.send(Self.head("POST", "/v1/decide", length: 10_000_000))
                let answer = try connection.answer(within: 30)
                return (answer, connection.closedByPeer(within: 30))
            }
            #expect(first.0?.status == 413)
            #expect(first.0?.headers["connection"]?.lowercased() == "close")
            #expect(first.1)
        }
    }

    @Test func aSignInPastTheLimitAnswered429LeavesTheConnectionUsable() async throws {
        let t = try TestServer { $0.signInLimit = RateLimit(requests: 1, window: 3600) }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let body = #"{"username": "nobody", "pin": "1234"}"#
            // The one sign-in the limit allows, answered after its body (whatever the answer).
            _ = try await onThread { try RawConnection.exchange(port: port, "POST", "/v1/auth/pin/signin", body: body) }
            let result = try await onThread {
                try Self.earlyAnswer(port: port, head: Self.head("POST", "/v1/auth/pin/signin", length: body.utf8.count), body: body)
            }
            #expect(result.first?.status == 429)
            #expect(result.honest, "\(result.detail)")
        }
    }
}
