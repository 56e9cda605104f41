import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How a decision route reads its body off the wire (`readBytes`, then `DecisionBodies.request` over the buffer):
/// a body in one part, split over reads, chunked or pipelined behind another must give the same answer, and the
/// connection must go on to the next request (issue 41 item 1 keeps these while it cuts the route's cost).
@Suite(.startsServers) struct DecisionBodyReadTests {
    static let freeAI = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let proAI = #"{"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#

    static func post(_ body: String, close: Bool = false) -> String {
        "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\n\(close ? "Connection: close\r\n" : "")Content-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// A body split over two writes (the server reads the first half and waits) answers as the whole one does.
    @Test func aBodySplitOverTwoWritesAnswersAsAWholeOne() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let (whole, early, split) = try await onThread { () throws -> (RawConnection.Answer?, Bool, RawConnection.Answer?) in
                let whole = try RawConnection.exchange(port: port, "POST", "/v1/decide", body: Self.freeAI)
                let connection = try RawConnection(port: port)
                let text = Self.post(Self.freeAI, close: true)
                let cut = text.utf8.count - Self.freeAI.utf8.count / 2
                let bytes = Array(text.utf8)
                try connection.send(Array(bytes[..<cut]))
                // Half a body has no answer: the server waits for the rest.
                let early = connection.readable(within: 300)
                try connection.send(Array(bytes[cut...]))
                return (whole, early, try connection.answer(within: 30))
            }
            #expect(!early)
            #expect(whole?.status == 200)
            #expect(split?.status == 200)
            #expect(split?.object["reason"] as? String == "requires_upgrade")
            #expect(split?.body == whole?.body)
        }
    }

    /// Requests pipelined in one write are each answered, in order, on the one connection (the first's end of body
    /// is read by the connection's loop, not by the route).
    @Test func pipelinedDecisionsAreAnsweredInOrder() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let text = try await onThread { () throws -> String in
                let connection = try RawConnection(port: port)
                try connection.send(
                    Self.post(Self.freeAI) + Self.post(Self.proAI) + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        + Self.post(Self.freeAI, close: true))
                return String(decoding: try connection.everything(within: 30), as: UTF8.self)
            }
            // Four answers, in the order asked: deny, allow, ok, deny.
            let statuses = text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
            #expect(statuses == ["200", "200", "200", "200"])
            let decisions = text.components(separatedBy: #""decision":""#).dropFirst().map { $0.prefix(while: { $0 != "\"" }) }
            #expect(decisions == ["deny", "allow", "deny"])
            #expect(text.contains("ok\n"))
        }
    }

    /// Keep-alive: the same connection answers decision after decision, whatever the route before.
    @Test func keepAliveDecisionsFollowOneAnother() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let decisions = try await onThread { () throws -> [String?] in
                let connection = try RawConnection(port: port)
                var out: [String?] = []
                for (i, body) in [Self.freeAI, Self.proAI, Self.freeAI, Self.proAI].enumerated() {
                    try connection.send(Self.post(body, close: i == 3))
                    out.append(try connection.answer(within: 30)?.object["decision"] as? String)
                    try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    out.append(try connection.answer(within: 30).map { String($0.status) })
                }
                return out
            }
            #expect(decisions == ["deny", "200", "allow", "200", "deny", "200", "allow", nil])
        }
    }

    /// A chunked body (no Content-Length) in two chunks is gathered and answers as the whole one does.
    @Test func aChunkedBodyAnswersAsAWholeOne() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let answer = try await onThread { () throws -> RawConnection.Answer? in
                let connection = try RawConnection(port: port)
                let body = Array(Self.proAI.utf8)
                let half = body.count / 2
                func chunk(_ part: ArraySlice<UInt8>) -> String { String(part.count, radix: 16) + "\r\n" + String(decoding: part, as: UTF8.self) + "\r\n" }
                try connection.send(
                    "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n" + chunk(body[..<half]))
                try connection.send(chunk(body[half...]) + "0\r\n\r\n")
                return try connection.answer(within: 30)
            }
            #expect(answer?.status == 200)
            #expect(answer?.object["decision"] as? String == "allow")
        }
    }

    /// A declared length past the limit is still a 413 before any byte is read; a body that fits the first part
    /// exactly at the limit is answered.
    @Test func theBodyLimitHoldsOnBothRoads() async throws {
        let limit = Self.proAI.utf8.count
        let t = try TestServer { $0.bodyLimit = limit }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let (atLimit, over) = try await onThread { () throws -> (RawConnection.Answer?, RawConnection.Answer?) in
                let atLimit = try RawConnection.exchange(port: port, "POST", "/v1/decide", body: Self.proAI)
                let over = try RawConnection.exchange(port: port, "POST", "/v1/decide", body: Self.proAI + " ")
                return (atLimit, over)
            }
            #expect(atLimit?.status == 200)
            #expect(over?.status == 413)
        }
    }
}

extension RawConnection {
    /// Every byte the server sends until it closes the connection (bounded by `seconds`).
    func everything(within seconds: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            guard readable(within: 50) else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }
}
