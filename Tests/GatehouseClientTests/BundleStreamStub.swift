import Foundation
import GatehouseEngine
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stand-in for the server's two bundle routes on a loopback port, for what a live server does not do on demand:
/// refuse the stream (an older server, a proxy), cut it after one event, serve an older revision after a reconnect.
/// Blocking sockets on threads of its own (never the cooperative pool); each connection answers one request.
final class BundleStreamStub: Sendable {
    enum StreamMode: Sendable {
        /// 404 problem+json, as a server without the route or the key answers.
        case refused
        /// The event of the bundle served now (unless `Last-Event-ID` names it), then the connection is cut.
        case oneEventThenCut
    }

    struct State {
        var bundle: [UInt8]
        var mode: StreamMode
        var streamRequests = 0
        var bundleRequests = 0
        var lastEventIDs: [String?] = []
    }

    let state: Mutex<State>
    let port: Int
    private let listener: Int32

    init(bundle: [UInt8], mode: StreamMode) throws {
        state = Mutex(State(bundle: bundle, mode: mode))
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 64) == 0 else {
            _ = close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                Thread.detachNewThread { self.answer(connection) }
            }
        }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Stops accepting (connections already answered end on their own).
    func stop() {
        _ = shutdown(listener, Int32(SHUT_RDWR))
        _ = close(listener)
    }

    private func answer(_ fd: Int32) {
        defer { _ = close(fd) }
        var head = [UInt8]()
        var byte: UInt8 = 0
        while head.count < 16384, recv(fd, &byte, 1, 0) == 1 {
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        func header(_ name: String) -> String? {
            lines.dropFirst().first { $0.lowercased().hasPrefix(name.lowercased() + ":") }.map {
                String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
            }
        }
        let (bundle, mode) = state.withLock { s in
            if path == "/v1/bundle/events" {
                s.streamRequests += 1
                s.lastEventIDs.append(header("Last-Event-ID"))
            } else if path == "/v1/bundle" {
                s.bundleRequests += 1
            }
            return (s.bundle, s.mode)
        }
        let etag = PolicyBundle.entityTag(of: bundle)
        switch path {
        case "/v1/bundle" where header("If-None-Match") == etag:
            write(fd, "HTTP/1.1 304 Not Modified\r\nETag: \(etag)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        case "/v1/bundle":
            write(fd, "HTTP/1.1 200 OK\r\nETag: \(etag)\r\nContent-Type: application/vnd.gatehouse.bundle\r\nContent-Length: \(bundle.count)\r\nConnection: close\r\n\r\n")
            write(fd, bundle)
        case "/v1/bundle/events" where mode == .oneEventThenCut:
            let manifest = (try? PolicyBundle.open(bundle))?.manifest
            var body = "retry: 1000\n\n"
            if header("Last-Event-ID") != etag, let manifest {
                let data = "{\"etag\":\"\(etag.replacingOccurrences(of: "\"", with: "\\\""))\",\"policyHash\":\"\(manifest.policyHash)\",\"revision\":\(manifest.revision)}"
                body += "id: \(etag)\nevent: bundle\ndata: \(data)\n\n"
            }
            write(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        default:
            let problem = #"{"type":"urn:gatehouse:problem:not_found","title":"Not found","status":404,"code":"not_found"}"#
            write(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: application/problem+json\r\nContent-Length: \(problem.utf8.count)\r\nConnection: close\r\n\r\n" + problem)
        }
    }

    private func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    private func write(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            #if canImport(Glibc)
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #else
            let n = bytes[sent...].withUnsafeBytes { Darwin.send(fd, $0.baseAddress, $0.count, 0) }
            #endif
            if n <= 0 { return }
            sent += n
        }
    }
}
