import Foundation
import HTTPTypes
import Hummingbird

/// The client address behind a trusted load balancer, for the per-client limits (the server's sign-in
/// limiter and the identity layer's per-source PIN window). Without it every client behind nginx would
/// share nginx's address: one client's wrong PINs would throttle everyone's sign-in.
public enum ForwardedClient {
    /// The client `X-Forwarded-For` names, read from the right: each proxy appends the address it saw, so
    /// the rightmost entry that is not itself a trusted proxy is the first one no trusted hop vouches
    /// past (entries further left are whatever the client sent). Nil when the peer is not trusted, the
    /// header is absent, or that entry is not an IP address.
    public static func resolve(peer: String?, forwardedFor: String?, trusted: Set<String>) -> String? {
        guard let peer, let peerAddress = canonical(peer), trusted.contains(peerAddress), let forwardedFor else { return nil }
        for entry in forwardedFor.split(separator: ",").reversed() {
            guard let address = canonical(entry.trimmingCharacters(in: .whitespaces)) else { return nil }
            if !trusted.contains(address) { return address }
        }
        return nil
    }

    /// The address in a canonical text form (so `::1` and `0:0::1` match), nil when `text` is not an
    /// IPv4 or IPv6 literal.
    public static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            var out = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            return inet_ntop(AF_INET, &v4, &out, socklen_t(out.count)).map { _ in decodeCString(out) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            return inet_ntop(AF_INET6, &v6, &out, socklen_t(out.count)).map { _ in decodeCString(out) }
        }
        return nil
    }

    /// The key of an address in the per-client limits: an IPv4 address as it is (an IPv4-mapped IPv6 one as its IPv4
    /// form), an IPv6 address as its first `ipv6Prefix` bits (`2001:db8:1:2::/64`), since one client is given a whole
    /// /64 and could take a fresh address from it for every request. Anything else (`local`) as it is.
    public static func limitKey(_ address: String, ipv6Prefix: Int = 64) -> String {
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        var bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map { String($0) }.joined(separator: ".")
        }
        let prefix = max(0, min(128, ipv6Prefix))
        for i in 0..<16 {
            let kept = max(0, min(8, prefix - i * 8))
            bytes[i] &= kept == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
        withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &out, socklen_t(out.count)) != nil else { return address }
        return decodeCString(out) + "/\(prefix)"
    }

    /// The C string in `buffer`, up to its terminating zero.
    private static func decodeCString(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Sets `ServerContext.forwardedClient` when the peer is a trusted load balancer.
struct ForwardedClientMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let trusted: Set<String>
    static let header = HTTPField.Name("X-Forwarded-For")!

    func handle(_ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        var context = context
        context.forwardedClient = Self.client(request.headers, peer: context.remoteAddress?.ipAddress, trusted: trusted)
        return try await next(request, context)
    }

    /// The client a trusted proxy's `X-Forwarded-For` (every such field, in order) names for a request from `peer`.
    static func client(_ fields: HTTPFields, peer: String?, trusted: Set<String>) -> String? {
        let header = fields[values: header].joined(separator: ",")
        return ForwardedClient.resolve(peer: peer, forwardedFor: header.isEmpty ? nil : header, trusted: trusted)
    }
}
