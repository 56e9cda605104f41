import Foundation
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many connections are open, against a cap (`--max-connections`).
final class ConnectionCount: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Counts one more connection; false (and nothing counted) when `limit` are open already.
    func acquire() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func release() { open.subtract(1, ordering: .acquiringAndReleasing) }

    var current: Int { open.load(ordering: .relaxed) }
}

/// Closes a new connection at once when the cap is reached (no answer, no handler), so idle or slow sockets cannot
/// take every file descriptor and starve the rest (`/healthz` on a connection that is let in); counts the
/// connection out when it closes.
final class ConnectionCap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    let count: ConnectionCount
    let refused: @Sendable () -> Void
    var counted = false

    init(_ count: ConnectionCount, refused: @escaping @Sendable () -> Void) {
        self.count = count
        self.refused = refused
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = count.acquire()
        if !counted {
            refused()
            if context.channel.isActive { context.close(promise: nil) }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        if !counted {
            context.close(promise: nil)
            return
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard counted else { return }  // a refused connection's bytes go nowhere
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseOnce()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { releaseOnce() }

    private func releaseOnce() {
        if counted {
            counted = false
            count.release()
        }
    }
}

/// Lets a log line through at most once per `interval` per key (a client), so a flood of bad requests cannot
/// flood the log; memory is bounded.
final class LogGate: Sendable {
    let interval: TimeInterval
    private let last = Mutex<[String: Date]>([:])

    init(interval: TimeInterval) { self.interval = interval }

    /// Whether a line for `key` may be written now (and, if so, marks it written).
    func allows(_ key: String, at t: Date = Date()) -> Bool {
        last.withLock { seen in
            if let previous = seen[key], t.timeIntervalSince(previous) < interval, t >= previous { return false }
            if seen.count >= 10_000 { seen.removeAll(keepingCapacity: true) }
            seen[key] = t
            return true
        }
    }
}
