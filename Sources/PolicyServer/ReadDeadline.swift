import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes  // the HTTP parts Hummingbird's codec passes on (swift-nio-extras)
import PolicyModel

/// A total read deadline per request: from the first byte of a request to its last, however steadily the
/// client trickles. The idle timeout only closes silent connections; this closes one that sends a byte now and
/// then to hold the connection (and a handler) forever.
///
/// Two handlers share one `ReadDeadline` on the connection's event loop: `ReadDeadlineClock`, at the socket
/// end of the pipeline, starts the clock on a request's first bytes (before the header is even parsed);
/// `ReadDeadlineWatcher`, after Hummingbird's codec, stops it when the request's end has been read and lets
/// the next request's bytes start it again once the answer is written. When the clock runs out the connection
/// gets `408` (problem+json, `read_timeout`) if no answer has started, and is closed; `timedOut` is called
/// either way (the server counts it in `/metrics`: no route saw the request).
///
/// Two cases need more than the parsed parts. A second request pipelined behind the first and sent only in part
/// arrives while (or in the same read as) the first is answered: its bytes are remembered, and the clock starts
/// for it when the first answer ends. And an answer that starts before its request was read (a 401 before the body,
/// a 413, 415 or 429) must not leave the connection in doubt: when at most `drainBytes` of a declared body remain,
/// the body is read (Hummingbird reads an unread body to its end before the next request) and the connection serves
/// the next request; otherwise the answer says `Connection: close` and ends in a lingering close, as nginx does: the
/// rest of the body is read and discarded for a bounded time and size, then the connection is closed, so a client
/// that sends its whole body before reading still reads the answer (closing with unread bytes would reset the
/// connection and lose it).
final class ReadDeadline {
    enum State { case waiting, reading, answering, lingering }
    /// The longest and the most a lingering close reads and discards.
    static let lingerTime: TimeAmount = .seconds(5)
    static let lingerBytes = 64 << 20
    /// The most of a declared body still unread that an early answer lets the connection read and keep going after.
    static let drainBytes = 64 << 10
    let limit: TimeAmount
    let answer: ByteBuffer
    var state = State.waiting
    var answerStarted = false
    /// The answer's end was written while the request was still being read (a 413 before the body's end).
    var answerFinished = false
    var timer: Scheduled<Void>?
    /// Closes a connection that has sent no byte within `limit` of opening; cancelled by the first byte.
    var firstByte: Scheduled<Void>?
    var awaitedFirstByte = false
    let timedOut: @Sendable () -> Void
    /// The socket end of the pipeline (the clock's context): where the clock and a lingering close act.
    var clockContext: ChannelHandlerContext?
    /// Bytes arrived while an answer was being made: the start of a pipelined request.
    var pendingBytes = false
    /// The last read's bytes, whether a request started with them, and the body sizes of the requests that ended
    /// in it (to see whether bytes of another request follow them).
    var lastRead: ByteBuffer?
    var requestStartedInRead = false
    var bodiesEndedInRead: [Int] = []
    var currentBody = 0
    var framingUnknown = false
    var discarded = 0
    /// The request's declared body length (nil: chunked or unknown).
    var declaredLength: Int?
    /// An early answer was given and the rest of the (small) body is being read so the connection can go on.
    var draining = false

    /// Whether an answer starting now, with the request still being read, lets the rest of the body be read and the
    /// connection go on (false: the answer must say `Connection: close`).
    var mayDrain: Bool {
        guard let declaredLength else { return false }
        return declaredLength - currentBody <= Self.drainBytes
    }

    init(limit: Duration, timedOut: @escaping @Sendable () -> Void = {}) {
        self.timedOut = timedOut
        let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        self.limit = .nanoseconds(nanoseconds)
        let seconds = Double(nanoseconds) / 1e9
        let body = Problem.readTimeout(seconds: seconds).json.rendered()
        answer = ByteBuffer(
            string: "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n" + body)
    }

    /// The handlers for one new connection (the clock adds itself at the socket end when the watcher is added).
    static func handlers(limit: Duration, timedOut: @escaping @Sendable () -> Void = {}) -> [any RemovableChannelHandler] {
        [ReadDeadlineWatcher(ReadDeadline(limit: limit, timedOut: timedOut))]
    }

    /// When the request being read runs out of time.
    var due = NIODeadline.distantFuture

    /// Starts the request's clock. One timer serves the connection's requests one after another: a request read in
    /// time leaves it pending (`requestRead`, no cancel), the next request's start only moves `due`, and the timer,
    /// when it fires before `due`, waits again for the rest. So a keep-alive connection schedules a timer once per
    /// `limit` at most, not once per request; a request still being read at `due` times out as before.
    func start(_ context: ChannelHandlerContext) {
        guard state == .waiting else { return }
        state = .reading
        answerStarted = false
        answerFinished = false
        pendingBytes = false
        due = .now() + limit
        if timer == nil { schedule(context, at: due) }
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard state == .reading else { return }
            let now = NIODeadline.now()
            if now < due {
                schedule(context, at: due)
                return
            }
            timedOut()
            if !answerStarted { context.writeAndFlush(NIOAny(answer), promise: nil) }
            context.close(promise: nil)
        }
    }

    /// The request's end was read: its clock stops (the timer, if pending, finds no request being read, or the next
    /// one's later `due`).
    func requestRead() {
        due = .distantFuture
    }

    func stop() {
        timer?.cancel()
        timer = nil
        due = .distantFuture
    }

    /// The least time a new connection has to send its first byte, whatever the read deadline: a client connects, then
    /// builds its first request (a client that opens its connection ahead, on a busy machine, a TLS proxy's pool).
    static let firstByteFloor: TimeAmount = .seconds(5)

    /// Starts the first-byte clock once per connection: no byte within `limit` (at least `firstByteFloor`) and the
    /// connection is closed, unanswered (no request began), and counted as a read timeout.
    func awaitFirstByte(_ context: ChannelHandlerContext) {
        guard !awaitedFirstByte else { return }
        awaitedFirstByte = true
        firstByte = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: max(limit, Self.firstByteFloor)) { [self] in
            firstByte = nil
            guard state == .waiting else { return }
            timedOut()
            context.close(promise: nil)
        }
    }

    /// The answer's end was written after its request's end: the clock starts again at once if bytes of another
    /// request are already here (pipelined), else with the next bytes.
    func answerEnded() {
        state = .waiting
        let follows = pendingBytes || bytesFollowLastRequest()
        lastRead = nil
        bodiesEndedInRead.removeAll(keepingCapacity: true)
        guard let context = clockContext, follows else { return }
        start(context)
    }

    /// Whether the last read holds bytes (other than line ends) past the requests that ended in it. Known only when
    /// the first of them started in that read and none was chunked (chunk framing is not in the body's size).
    func bytesFollowLastRequest() -> Bool {
        guard requestStartedInRead, !framingUnknown, let bytes = lastRead, !bodiesEndedInRead.isEmpty else { return false }
        return bytes.withUnsafeReadableBytes { raw -> Bool in
            var offset = 0
            for body in bodiesEndedInRead {
                guard let end = Self.headEnd(raw, from: offset) else { return false }
                offset = end + body
            }
            return raw[min(offset, raw.count)...].contains { $0 != 0x0D && $0 != 0x0A }
        }
    }

    /// The offset just past the first `CRLF CRLF` at or after `from`.
    static func headEnd(_ raw: UnsafeRawBufferPointer, from: Int) -> Int? {
        var i = from
        while i + 3 < raw.count {
            if raw[i + 3] != 0x0A {
                i += raw[i + 3] == 0x0D ? 1 : 4  // the fourth byte is not LF: no match ends before it unless it is CR
                continue
            }
            if raw[i] == 0x0D && raw[i + 1] == 0x0A && raw[i + 2] == 0x0D { return i + 4 }
            i += 1
        }
        return nil
    }

    /// The answer ended before its request was read whole: read and discard what the client still sends, for at
    /// most `lingerTime` and `lingerBytes`, then close.
    func linger() {
        guard let context = clockContext else { return }
        stop()
        state = .lingering
        discarded = 0
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: min(limit, Self.lingerTime)) { [self] in
            timer = nil
            context.close(promise: nil)
        }
        context.read()
    }
}

/// Starts a request's clock on its first bytes; sits first in the pipeline, on raw bytes.
final class ReadDeadlineClock: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let deadline: ReadDeadline

    init(_ deadline: ReadDeadline) { self.deadline = deadline }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline.clockContext = context
        // A connection must send its first byte within the read deadline (issue 36, N3): a silent one is closed then,
        // not at the idle timeout, so idle sockets cannot hold connections for long.
        if context.channel.isActive { deadline.awaitFirstByte(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        deadline.awaitFirstByte(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.firstByte?.cancel()
        deadline.firstByte = nil
        if deadline.state == .lingering {
            deadline.discarded += unwrapInboundIn(data).readableBytes
            if deadline.discarded > ReadDeadline.lingerBytes { context.close(promise: nil) } else { context.read() }
            return
        }
        if deadline.state == .answering { deadline.pendingBytes = true }
        deadline.requestStartedInRead = deadline.state == .waiting
        deadline.lastRead = unwrapInboundIn(data)
        deadline.bodiesEndedInRead.removeAll(keepingCapacity: true)
        deadline.start(context)
        context.fireChannelRead(data)
        // Kept only while a request that ended in it awaits its answer: an idle connection holds no read buffer.
        if deadline.bodiesEndedInRead.isEmpty { deadline.lastRead = nil }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        deadline.firstByte?.cancel()
        deadline.firstByte = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.stop()
        deadline.firstByte?.cancel()
        deadline.firstByte = nil
        deadline.clockContext = nil
    }
}

/// Stops the clock when the request's end is read; after the answer's end is written, the next bytes start it.
final class ReadDeadlineWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    let deadline: ReadDeadline

    init(_ deadline: ReadDeadline) { self.deadline = deadline }

    func handlerAdded(context: ChannelHandlerContext) {
        try? context.pipeline.syncOperations.addHandler(ReadDeadlineClock(deadline), position: .first)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            deadline.currentBody = 0
            deadline.framingUnknown = head.headerFields.value(.transferEncoding) != nil
            deadline.declaredLength = deadline.framingUnknown ? nil : head.headerFields.value(.contentLength).map { Int($0) } ?? 0
            deadline.draining = false
        case .body(let part):
            deadline.currentBody += part.readableBytes
        case .end:
            deadline.bodiesEndedInRead.append(deadline.currentBody)
            deadline.requestRead()
            deadline.state = deadline.answerFinished ? .waiting : .answering
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            deadline.answerStarted = true
            if deadline.state == .reading {
                // An early answer: read a small rest of the body and go on, or tell the client this connection ends.
                if deadline.mayDrain {
                    deadline.draining = true
                } else {
                    head.headerFields[.connection] = "close"
                    context.write(wrapOutboundOut(.head(head)), promise: promise)
                    return
                }
            }
        case .end:
            switch deadline.state {
            case .answering: deadline.answerEnded()
            case .reading where deadline.draining:
                // The request's end, when read, leaves the connection waiting for the next request.
                deadline.answerFinished = true
            case .reading:
                deadline.answerFinished = true
                context.write(data, promise: promise)
                deadline.linger()
                return
            default: deadline.answerFinished = true
            }
        default: break
        }
        context.write(data, promise: promise)
    }
}
