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
final class ReadDeadline {
    enum State { case waiting, reading, answering }
    let limit: TimeAmount
    let answer: ByteBuffer
    var state = State.waiting
    var answerStarted = false
    /// The answer's end was written while the request was still being read (a 413 before the body's end).
    var answerFinished = false
    var timer: Scheduled<Void>?
    let timedOut: @Sendable () -> Void

    init(limit: Duration, timedOut: @escaping @Sendable () -> Void = {}) {
        self.timedOut = timedOut
        let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        self.limit = .nanoseconds(nanoseconds)
        let seconds = Double(nanoseconds) / 1e9
        let body = Problem(
            status: 408, code: "read_timeout", title: "Request Timeout",
            detail: "the request was not read within \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s"
        ).json.rendered()
        answer = ByteBuffer(
            string: "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n" + body)
    }

    /// The handlers for one new connection (the clock adds itself at the socket end when the watcher is added).
    static func handlers(limit: Duration, timedOut: @escaping @Sendable () -> Void = {}) -> [any RemovableChannelHandler] {
        [ReadDeadlineWatcher(ReadDeadline(limit: limit, timedOut: timedOut))]
    }

    func start(_ context: ChannelHandlerContext) {
        guard state == .waiting else { return }
        state = .reading
        answerStarted = false
        answerFinished = false
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: limit) { [self] in
            timer = nil
            guard state == .reading else { return }
            timedOut()
            if !answerStarted { context.writeAndFlush(NIOAny(answer), promise: nil) }
            context.close(promise: nil)
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}

/// Starts a request's clock on its first bytes; sits first in the pipeline, on raw bytes.
final class ReadDeadlineClock: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let deadline: ReadDeadline

    init(_ deadline: ReadDeadline) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.start(context)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline.stop() }
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
        if case .end = unwrapInboundIn(data) {
            deadline.stop()
            deadline.state = deadline.answerFinished ? .waiting : .answering
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: deadline.answerStarted = true
        case .end:
            if deadline.state == .answering { deadline.state = .waiting } else { deadline.answerFinished = true }
        default: break
        }
        context.write(data, promise: promise)
    }
}
