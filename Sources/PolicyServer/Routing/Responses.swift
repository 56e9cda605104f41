import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Identity
import Logging
import NIOCore
import NIOHTTP1
import PolicyEngine
import PolicyModel
import ServiceLifecycle
import Synchronization

/// The one place a problem becomes an HTTP answer: its status, `application/problem+json`, `Retry-After`.
func problemResponse(_ problem: Problem) -> Response {
    var problem = problem
    // With tracing on, the request's trace id, so a support ticket can quote it (`traceId`).
    if DecisionTracing.isEnabled, problem.traceId == nil { problem.traceId = ServerTracing.currentTraceId() }
    var headers: HTTPFields = [.contentType: "application/problem+json"]
    if let retry = problem.retryAfter { headers[.retryAfter] = String(retry) }
    return Response(
        status: HTTPResponse.Status(code: problem.status), headers: headers,
        body: .init(byteBuffer: ByteBuffer(string: problem.json.rendered())))
}

func json(_ value: JSONText, status: HTTPResponse.Status = .ok, policy: String? = nil) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    if let policy { headers[.gatehousePolicy] = policy }
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: value.rendered())))
}

extension Response {
    /// RFC 6750's challenge for an access token the server did not accept: with a 401, and beside an answer made for a
    /// signed-out subject (the decision and plan routes answer 200 then).
    static let invalidToken = #"Bearer error="invalid_token""#

    /// This answer, with `invalidToken` when `report` says the bearer was refused.
    func refusingBearer(_ report: BearerReport?) -> Response {
        guard report?.refused == true else { return self }
        var answer = self
        answer.headers[.wwwAuthenticate] = Self.invalidToken
        return answer
    }
}

/// A JSON answer already written as bytes (`DecisionWriter`), with the headers naming the policy version that made it.
func jsonBytes(_ bytes: [UInt8], _ headers: HTTPFields) -> Response {
    Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// The headers of a decision answer (JSON, `Gatehouse-Policy`), built once per policy version rather than once
/// per request: building `HTTPFields` from a literal was about 2,300 instructions of a decide request.
final class DecisionHeaders: Sendable {
    private let cached = Mutex<(hash: String, fields: HTTPFields)?>(nil)

    /// The headers of an answer by `policy`, with `Response.invalidToken` when `report` says the bearer was refused.
    func fields(for policy: CompiledPolicy, _ report: BearerReport?) -> HTTPFields {
        guard report?.refused == true else { return fields(for: policy) }
        var fields = fields(for: policy)
        fields[.wwwAuthenticate] = Response.invalidToken
        return fields
    }

    func fields(for policy: CompiledPolicy) -> HTTPFields {
        let hash = policy.contentHash
        return cached.withLock { cached in
            if let cached, cached.hash == hash { return cached.fields }
            let fields: HTTPFields = [.contentType: "application/json", .gatehousePolicy: hash]
            cached = (hash, fields)
            return fields
        }
    }
}

func text(_ value: String) -> Response {
    Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: value)))
}

/// The body as text, refused with 413 when it is (or says it is) longer than `limit`: a declared length is
/// refused before any byte is read, a streamed one as soon as the limit is passed.
func readBody(_ request: Hummingbird.Request, limit: Int) async throws -> String {
    String(buffer: try await readBytes(request, limit: limit))
}

func readBytes(_ request: Hummingbird.Request, limit: Int) async throws -> ByteBuffer {
    if let declared = request.headers.value(.contentLength).flatMap({ Int($0) }), declared > limit { throw Problem.bodyTooLarge(limit: limit) }
    // By hand rather than `collect(upTo:)`: a body that arrives in one part (the usual small JSON body) is
    // that part itself, with no accumulating buffer to allocate and copy into.
    var parts = request.body.makeAsyncIterator()
    guard var body = try await parts.next() else { return ByteBuffer() }
    guard body.readableBytes <= limit else { throw Problem.bodyTooLarge(limit: limit) }
    while var part = try await parts.next() {
        guard body.readableBytes + part.readableBytes <= limit else { throw Problem.bodyTooLarge(limit: limit) }
        body.writeBuffer(&part)
    }
    return body
}

/// The bearer token, nil without an Authorization header; anything but `Bearer <token>` is a 401.
func bearerToken(_ request: Hummingbird.Request) throws -> String? {
    try bearerToken(request.headers.value(.authorization))
}

/// The bearer token of an Authorization header's value (nil without one); anything but `Bearer <token>` is a 401.
func bearerToken(_ value: String?) throws -> String? {
    guard let value else { return nil }
    guard value.count > 7, value.prefix(7).lowercased() == "bearer " else { throw Problem.malformedAuthorization }
    // Spaces and tabs around the token trimmed by hand (Foundation's trimming bridges to NSString on every request).
    let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    var token = value.dropFirst(7).drop(while: blank)
    while let last = token.last, blank(last) { token = token.dropLast() }
    guard !token.isEmpty else { throw Problem.malformedAuthorization }
    return String(token)
}

/// The key of the client's per-source limits: the address a trusted load balancer forwarded for, else
/// the peer's address, or `local` when there is none (tests); an IPv6 address by its prefix (`ForwardedClient.limitKey`).
func clientKey(_ context: ServerContext, ipv6Prefix: Int) -> String {
    clientKey(forwarded: context.forwardedClient, peer: context.remoteAddress?.ipAddress, ipv6Prefix: ipv6Prefix)
}

/// The per-client key of a request: the client a trusted proxy named, else the peer.
func clientKey(forwarded: String?, peer: String?, ipv6Prefix: Int) -> String {
    ForwardedClient.limitKey(forwarded ?? peer ?? "local", ipv6Prefix: ipv6Prefix)
}

func requiredBearer(_ request: Hummingbird.Request) throws -> String {
    guard let token = try bearerToken(request) else { throw Problem.missingBearer }
    return token
}
