import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to a loopback port, for what an HTTP client library hides: trickling bytes, a body
/// cut short, watching for an answer before sending more. Blocking calls: run them with `onThread`.
final class RawConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// An answer as read off the wire.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    let fd: Int32

    /// A connection to `port` on 127.0.0.1, from `source` (another loopback address: another client) when given.
    init(port: Int, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw Failure(call: "bind", code: errno) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw Failure(call: "connect", code: errno) }  // deinit closes the socket
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(call: "send", code: errno) }
            sent += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Whether bytes (or the end of the stream) are waiting to be read, waiting at most `milliseconds`.
    func readable(within milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }

    /// Reads one answer: the head, then the body by its Content-Length or to the end of the stream; nil when
    /// nothing complete came within `seconds`.
    func answer(within seconds: Double) throws -> Answer? {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            if let answer = Self.parse(bytes, ended: false) { return answer }
            guard readable(within: 50) else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == ECONNRESET { return Self.parse(bytes, ended: true) }
            guard n >= 0 else { throw Failure(call: "recv", code: errno) }
            if n == 0 { return Self.parse(bytes, ended: true) }
            bytes += buffer[0..<n]
        }
        return nil
    }

    /// Whether the server has closed the connection (a read sees the end), waiting at most `seconds`.
    func closedByPeer(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard readable(within: 50) else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
        }
        return false
    }

    private static func parse(_ bytes: [UInt8], ended: Bool) -> Answer? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = String(text[split.upperBound...])
        // No body, whatever the headers say (RFC 9110 §6.4.1): 204 and 304 end with their head.
        if status == 204 || status == 304 { return Answer(status: status, headers: headers, body: "") }
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.utf8.count >= length else { return ended ? Answer(status: status, headers: headers, body: body) : nil }
            return Answer(status: status, headers: headers, body: String(decoding: Array(body.utf8).prefix(length), as: UTF8.self))
        }
        return ended ? Answer(status: status, headers: headers, body: body) : nil
    }

    /// One request on a fresh connection and its answer (bounded by `seconds`).
    static func exchange(
        port: Int, _ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:], seconds: Double = 30, source: String? = nil
    ) throws -> Answer? {
        let connection = try RawConnection(port: port, source: source)
        try connection.send(request(method, path, body: body, headers: headers))
        return try connection.answer(within: seconds)
    }

    /// An HTTP/1.1 request's text (`Connection: close`, a Content-Length for a body).
    static func request(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + (body ?? "")
    }
}

/// Runs blocking work on a thread of its own, so it never holds one of the few cooperative threads the
/// in-process server's handlers need.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

extension RawConnection.Answer {
    /// The body as a JSON object.
    var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
}
