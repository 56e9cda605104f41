import Foundation
import Gatehouse
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes  // the HTTP parts Hummingbird's codec passes on (swift-nio-extras)
import PolicyEngine
import Synchronization

/// Answers the commonest request, a whole `POST /v1/decide`, on the connection's event loop as soon as it is read,
/// ahead of Hummingbird's router, when its decision needs nothing awaited: without a bearer, or with a bearer whose
/// session (and resource, when the decision reads one) the decision cache holds; every other request, and any decide
/// request this road is not sure of, goes on to Hummingbird exactly as it came (issue 41 item 1).
///
/// Why: a decide request read through Hummingbird pays its async road for the body (NIO's inbound async sequence, the
/// request body's iterator, a task hop; about 38,000 instructions over `/healthz`, docs/performance.md), while the
/// decision itself needs nothing awaited when no bearer is given (`GatehouseService.decideWithoutStore`: no store
/// read; a decision-log record is queued, not written).
///
/// What keeps the two roads one in effect:
/// - **Only what is certain is taken.** The request's head must be `POST /v1/decide` with no query, one
///   `Content-Type: application/json`, one `Content-Length` within the body limit, at most one `Authorization`, and no
///   `Transfer-Encoding`, `Expect` or `Connection` header; its head, body and end must all arrive in one read (so
///   nothing here ever waits for bytes); and no earlier request on the connection may still be Hummingbird's to
///   answer (so answers stay in the order asked). Anything else is passed on untouched.
/// - **The same work, by the same code.** The body is read by `DecisionBodies.request` with the server's limit, decided
///   by `decideWithoutStore` (resolve, decide, observe, record, shadow) with the same origin the route would make, or
///   with a bearer (read by the route's `bearerToken`) by `decideFromMemory`, which answers only from a cached session
///   that is live and needs no last-seen write, so a token refused, a session ended (its cache entry is dropped when
///   it ends, on this replica or, through the store's relay, on another), a cache miss or a write due all go on,
///   answered with the route's bytes and headers (`Decision.jsonBytes`, `DecisionHeaders`, then `Content-Length` and
///   `Date` as Hummingbird adds them), and timed in the route's latency histogram. A body the reader refuses, or a
///   caller-named subject the server does not trust, throws before anything is decided or recorded: the request is
///   then passed on whole and Hummingbird answers it (the same problem+json as ever).
/// - The decision log's client is the router's: the peer, or behind a trusted proxy the `X-Forwarded-For` client
///   (`Road.client`). It is not installed when tracing is on (the request span is the router's), nor with
///   `ServerSettings.decideAhead` off.
///
/// The read deadline, the connection cap and Hummingbird's connection state (idle timeout, graceful shutdown) sit before
/// this handler and see every request and answer either way (`Installer`).
/// `DecideAheadTests` sends the same requests, good and bad, split and pipelined, to a server with and without it and
/// requires the same bytes back.
final class DecideAhead: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What every connection's handler shares.
    final class Road: Sendable {
        let service: GatehouseService
        let limit: Int
        let latency: ServerMetrics.LatencyTimer
        let metrics: ServerMetrics
        let headers = DecisionHeaders()
        let logging: Bool
        let maxRecords: Int
        let ipv6Prefix: Int
        let trusted: Set<String>
        let date = HTTPDate()

        init(_ server: GatehouseServer) {
            service = server.service
            limit = server.settings.bodyLimit
            latency = server.metrics.decisionLatency("decide")
            metrics = server.metrics
            logging = server.service.decisionLog != .off
            maxRecords = server.service.recorder.settings.maxPerRequest
            ipv6Prefix = server.settings.ipv6PrefixLength
            trusted = server.settings.trustedProxies
        }

        /// The decision log's client for a request from `peer`: as `ForwardedClientMiddleware` and `clientKey` make it
        /// on the router's road (behind a trusted proxy, the `X-Forwarded-For` client).
        func client(_ head: HTTPRequest, peer: String?) -> String {
            let forwarded = trusted.isEmpty ? nil : ForwardedClientMiddleware.client(head.headerFields, peer: peer, trusted: trusted)
            return clientKey(forwarded: forwarded, peer: peer, ipv6Prefix: ipv6Prefix)
        }
    }

    /// The handlers for one new connection: none when this road must not be taken (see the type's comment).
    static func handlers(road: Road?) -> [any RemovableChannelHandler] {
        guard let road, !DecisionTracing.isEnabled else { return [] }
        return [Installer(road)]
    }

    /// Puts a `DecideAhead` just after Hummingbird's `HTTPConnectionStateHandler` when the connection's first part is
    /// read, and leaves. After it, not before: that handler counts the requests in progress (the idle timeout and a
    /// graceful shutdown's close wait for them) from the parts it sees, so it must see this road's requests and
    /// answers too, or a connection busy with decisions only would look idle and be closed. Hummingbird adds its
    /// handler after the configuration's, so the place exists only once the pipeline is built. Without that handler
    /// (another Hummingbird) nothing is added and every request takes the router.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        let road: Road

        init(_ road: Road) { self.road = road }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let pipeline = context.pipeline.syncOperations
            if let state = try? pipeline.context(handlerType: HTTPConnectionStateHandler.self) {
                try? pipeline.addHandler(DecideAhead(road), position: .after(state.handler))
            }
            context.fireChannelRead(data)
            pipeline.removeHandler(context: context, promise: nil)
        }
    }

    /// The road when the server may take it at all, nil otherwise.
    static func road(_ server: GatehouseServer) -> Road? {
        guard server.settings.decideAhead else { return nil }
        return Road(server)
    }

    let road: Road
    /// Requests passed on whose answer has not ended: while any is, every request is passed on (answers in order).
    private var passedOn = 0
    /// A decide request being read in this read: its head and the body so far.
    private var held: (head: HTTPRequest, body: ByteBuffer?)?

    init(_ road: Road) { self.road = road }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if passedOn == 0, held == nil, takes(head) {
                held = (head, nil)
                return
            }
            passedOn += 1
            context.fireChannelRead(data)
        case .body(var part):
            guard held != nil else { return context.fireChannelRead(data) }
            if held!.body == nil { held!.body = part } else { held!.body!.writeBuffer(&part) }
        case .end(let trailers):
            guard let request = held else { return context.fireChannelRead(data) }
            held = nil
            if !answer(request.head, request.body ?? ByteBuffer(), context: context) {
                passOn(request, context: context)
                context.fireChannelRead(wrapInboundOut(.end(trailers)))
            }
        }
    }

    /// A request not whole at the end of a read is Hummingbird's: what was held goes on, the rest follows as it comes.
    func channelReadComplete(context: ChannelHandlerContext) {
        if let request = held {
            held = nil
            passOn(request, context: context)
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        held = nil
        context.fireChannelInactive()
    }

    /// Hummingbird's answers pass here (this road's own are written from this handler, below it): each end is one
    /// request passed on answered.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// The peer's client key, made once a connection (the peer does not change; `ipAddress` formats it every call).
    private var peerKey: String?

    /// The decision log's client for `head` (`Road.client`; the peer's key kept for the connection when no proxy is
    /// trusted, since then it depends on the peer alone).
    private func client(_ head: HTTPRequest, context: ChannelHandlerContext) -> String {
        guard road.trusted.isEmpty else { return road.client(head, peer: context.channel.remoteAddress?.ipAddress) }
        if let peerKey { return peerKey }
        let key = road.client(head, peer: context.channel.remoteAddress?.ipAddress)
        peerKey = key
        return key
    }

    private func passOn(_ request: (head: HTTPRequest, body: ByteBuffer?), context: ChannelHandlerContext) {
        passedOn += 1
        context.fireChannelRead(wrapInboundOut(.head(request.head)))
        if let body = request.body { context.fireChannelRead(wrapInboundOut(.body(body))) }
    }

    /// Whether `head` is a request this road answers (its body still to be read and judged).
    private func takes(_ head: HTTPRequest) -> Bool {
        guard head.method == .post, head.path == "/v1/decide" else { return false }
        var json = false
        var length: Int?
        var authorization = false
        for field in head.headerFields {
            switch field.name {
            case .contentType:
                guard !json, field.value == "application/json" else { return false }
                json = true
            case .contentLength:
                guard length == nil, let declared = Int(field.value), declared >= 0, declared <= road.limit else { return false }
                length = declared
            case .authorization:
                guard !authorization else { return false }
                authorization = true
            case .transferEncoding, .expect, .connection:
                return false
            default:
                continue
            }
        }
        return json && length != nil
    }

    /// Decides and writes the answer; false (nothing decided, recorded or written) when the route must answer instead.
    private func answer(_ head: HTTPRequest, _ body: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        let start = DispatchTime.now().uptimeNanoseconds
        let service = road.service
        let policy = service.policy
        let decision: Decision
        do {
            let bearer = try bearerToken(head.headerFields.value(.authorization))
            let request = try DecisionBodies.request(body, limit: road.limit)
            let origin = road.logging ? DecisionOrigin(client: client(head, context: context), maxRecords: road.maxRecords) : nil
            let decided = if let bearer {
                try service.decideFromMemory(request, bearer: bearer, by: policy, origin: origin)
            } else {
                try service.decideWithoutStore(request, bearer: nil, by: policy, origin: origin)
            }
            guard let decided else { return false }
            decision = decided
        } catch {
            return false
        }
        let bytes = decision.jsonBytes
        var fields = road.headers.fields(for: policy, nil)
        fields[.contentLength] = String(bytes.count)
        fields[.date] = road.date.now()
        // Counted before the answer leaves, so that whoever has read the answer sees it counted.
        road.metrics.answeredAhead.add(1, ordering: .relaxed)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: bytes))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        road.latency.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds - start))
        return true
    }
}

/// The `Date` header's text (RFC 9110's IMF-fixdate, as Hummingbird writes it), made once a second.
final class HTTPDate: Sendable {
    private let cached = Mutex<(second: Int, text: String)>((-1, ""))

    func now() -> String {
        let second = time(nil)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, Self.text(second)) }
            return cached.text
        }
    }

    static func text(_ second: Int) -> String {
        var t = time_t(second)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
