import Foundation
@testable import GatehouseClient
import Testing

/// Issue 39: the client sends the app tracer's W3C Trace Context through its hook (`traceparent`, `tracestate`, nothing
/// else), and a problem's `traceId` reaches the caller's error.
@Suite(.startsServers) struct TraceContextClientTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func theHookSendsTraceparentAndTracestateOnly() async throws {
        let origin = try TinyHTTPServer { _ in TinyHTTPServer.allowed }
        defer { origin.stop() }
        let client = GatehouseClient(
            serverURL: origin.url, tokenStore: CredentialForwardingTests.signedIn(),
            traceContext: {
                ["traceparent": Self.traceparent, "TraceState": "vendor=1", "Authorization": "Bearer stolen", "x-other": "no"]
            })
        _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app"))
        let head = try #require(origin.heads.first)
        #expect(head.contains("traceparent: \(Self.traceparent)"), "\(head)")
        #expect(head.contains("tracestate: vendor=1"), "\(head)")
        #expect(!head.contains("x-other"), "\(head)")
        #expect(!head.contains("stolen"), "\(head)")
        #expect(head.contains("authorization: bearer gha_forwarding-secret"), "\(head)")
    }

    @Test func noHookSendsNoTraceHeaders() async throws {
        let origin = try TinyHTTPServer { _ in TinyHTTPServer.allowed }
        defer { origin.stop() }
        let client = GatehouseClient(serverURL: origin.url, tokenStore: CredentialForwardingTests.signedIn())
        _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app"))
        let head = try #require(origin.heads.first)
        #expect(!head.contains("traceparent"), "\(head)")
    }

    @Test func aProblemsTraceIdReachesTheError() async throws {
        let body = #"{"type":"urn:gatehouse:problem:invalid_request","title":"Invalid request","status":400,"code":"invalid_request","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}"#
        let origin = try TinyHTTPServer { _ in
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        }
        defer { origin.stop() }
        let client = GatehouseClient(serverURL: origin.url, tokenStore: CredentialForwardingTests.signedIn())
        let error = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
        #expect(error?.code == "invalid_request")
        #expect(error?.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(error?.description.contains("trace 4bf92f3577b34da6a3ce929d0e0e4736") == true)
    }
}
