import Foundation
@testable import GatehouseClient
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
import GatehouseTestSupport
#endif

/// A loopback HTTP/1.1 server of a few lines, for answers a real server never gives (a redirect to another origin):
/// every request gets `answer(head)` and the connection is closed; the request heads are kept.
final class TinyHTTPServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let seen = Mutex<[String]>([])
    private let answer: @Sendable (String) -> String

    /// The heads of the requests received so far, lowercased.
    var heads: [String] { seen.withLock { $0 } }

    init(answer: @escaping @Sendable (String) -> String) throws {
        self.answer = answer
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Failure(call: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            Glibc.close(listener)
            throw Failure(call: "bind/listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        fd = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }  // closed by stop()
                serve(connection)
            }
        }
    }

    struct Failure: Error { var call: String }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Reads one request (its head, kept as soon as it is whole, then a Content-Length body, bounded), answers it
    /// and closes.
    private func serve(_ connection: Int32) {
        defer { Glibc.close(connection) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        var head: String?
        var length = 0
        while bytes.count < 1 << 20 {
            if let head, String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n\r\n").dropFirst().joined().utf8.count >= length {
                _ = head
                break
            }
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
            guard head == nil else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let headText = String(text[..<end.lowerBound]).lowercased()
            length = headText.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            head = headText
            seen.withLock { $0.append(headText) }
        }
        guard let head else { return }
        let reply = Array(answer(head).utf8)
        _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    /// A 307 to `location`.
    static func redirect(to location: String) -> String {
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    }

    /// A 200 with a decision body.
    static let allowed: String = {
        let body = #"{"decision":"allow","reason":"allowed"}"#
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }()
}

/// N7 (issue 36): the access token goes only where it should: never over plain http to a host other than this
/// machine, never to another origin a redirect names.
@Suite(.startsServers) struct CredentialForwardingTests {
    /// A session whose access token is live for an hour by any clock, so no call refreshes first.
    static func signedIn() -> InMemoryTokenStore {
        InMemoryTokenStore(
            TokenPair(accessToken: "gha_forwarding-secret", accessExpiresAt: Date().addingTimeInterval(3600), refreshToken: "ghr_forwarding-refresh", userId: "u1"))
    }

    @Test func aRedirectToAnotherOriginNeverCarriesTheBearerOrTheBody() async throws {
        let elsewhere = try TinyHTTPServer { _ in TinyHTTPServer.allowed }
        defer { elsewhere.stop() }
        let origin = try TinyHTTPServer { _ in TinyHTTPServer.redirect(to: "http://127.0.0.1:\(elsewhere.port)/v1/decide") }
        defer { origin.stop() }
        let client = GatehouseClient(serverURL: origin.url, tokenStore: Self.signedIn())
        let error = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
        // The request did carry the bearer to its own origin...
        #expect(origin.heads.count == 1)
        #expect(origin.heads.first?.contains("authorization: bearer gha_forwarding-secret") == true)
        // ...and nothing of it reached the other origin: the redirect was refused, and the call failed.
        #expect(elsewhere.heads.allSatisfy { !$0.contains("authorization") }, "\(elsewhere.heads)")
        #expect(elsewhere.heads.isEmpty, "\(elsewhere.heads)")
        #expect(error != nil)
        #expect(error?.code == CredentialPolicy.redirectRefused && error?.status == 307, "\(String(describing: error))")
        #expect(!(error?.description.contains("gha_forwarding-secret") ?? false))
    }

    @Test func aRedirectToTheSameOriginIsFollowedWithTheBearer() async throws {
        let origin = try TinyHTTPServer { head in
            head.hasPrefix("post /v1/decide ") ? TinyHTTPServer.redirect(to: "/v1/decide-moved") : TinyHTTPServer.allowed
        }
        defer { origin.stop() }
        let client = GatehouseClient(serverURL: origin.url, tokenStore: Self.signedIn())
        _ = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
        #expect(origin.heads.count == 2, "\(origin.heads)")
        #expect(origin.heads.allSatisfy { $0.contains("authorization: bearer gha_forwarding-secret") }, "\(origin.heads)")
    }

    @Test(arguments: ["http://gatehouse.example", "http://10.0.0.7:8080", "http://gatehouse.example.invalid:8080/api"])
    func plainHTTPToAnotherMachineIsRefusedBeforeAnythingIsSent(_ address: String) async throws {
        let client = GatehouseClient(serverURL: URL(string: address)!, tokenStore: Self.signedIn())
        let decide = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
        #expect(decide?.code == "insecure_transport", "\(String(describing: decide))")
        let signIn = await thrownClientError { _ = try await GatehouseClient(serverURL: URL(string: address)!).signIn(username: "ann", pin: "1234") }
        #expect(signIn?.code == "insecure_transport", "\(String(describing: signIn))")
    }

    @Test func plainHTTPToThisMachineIsAllowed() async throws {
        let origin = try TinyHTTPServer { _ in TinyHTTPServer.allowed }
        defer { origin.stop() }
        for host in ["127.0.0.1", "localhost"] {
            let client = GatehouseClient(serverURL: URL(string: "http://\(host):\(origin.port)")!, tokenStore: Self.signedIn())
            let error = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
            #expect(error?.code != "insecure_transport", "\(host)")
        }
        #expect(origin.heads.count == 2)
    }

    /// The development opt-in lets plain http reach another machine (here a name that does not resolve: the call
    /// fails on the network, not before it).
    @Test func theDevelopmentOptInAllowsPlainHTTPElsewhere() async throws {
        let client = GatehouseClient(serverURL: URL(string: "http://gatehouse.example.invalid:8080")!, tokenStore: Self.signedIn(), allowsInsecureHTTP: true)
        let error = await thrownClientError { _ = try await client.decide(action: "ai_suggestions", resource: Resource(type: "app")) }
        #expect(error != nil && error?.code != "insecure_transport", "\(String(describing: error))")
    }

    @Test func loopbackAndOriginsAreJudgedExactly() {
        for host in ["127.0.0.1", "127.3.2.1", "localhost", "LOCALHOST", "::1", "[::1]"] { #expect(CredentialPolicy.isLoopback(host: host), "\(host)") }
        for host in ["127.0.0.1.example.com", "localhost.example.com", "10.0.0.1", "128.0.0.1", "::2", "example.com", ""] {
            #expect(!CredentialPolicy.isLoopback(host: host), "\(host)")
        }
        let base = URL(string: "https://api.example.com/v1")!
        #expect(CredentialPolicy.sameOrigin(base, URL(string: "https://API.example.com:443/other")!))
        #expect(!CredentialPolicy.sameOrigin(base, URL(string: "http://api.example.com/v1")!))
        #expect(!CredentialPolicy.sameOrigin(base, URL(string: "https://api.example.com:8443/v1")!))
        #expect(!CredentialPolicy.sameOrigin(base, URL(string: "https://evil.example.com/v1")!))
    }
}
