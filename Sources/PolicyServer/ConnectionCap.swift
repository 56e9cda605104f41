import Foundation
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many connections are open, against a cap in all (`--max-connections`) and one per client
/// (`--max-connections-per-client`, the client as the rate limits key it: an IPv4 address, an IPv6 /64).
final class ConnectionCount: Sendable {
    let limit: Int
    let perClient: Int
    private let open = Atomic<Int>(0)
    /// Open connections per client key; an entry goes when its count does, so it holds at most `limit` keys.
    private let byClient = Mutex<[String: Int]>([:])

    init(limit: Int, perClient: Int = .max) {
        self.limit = limit
        self.perClient = perClient
    }

    /// Counts one more connection of `client` (nil: a trusted proxy, counted in the total only); false (and nothing
    /// counted) when `limit` are open already, or `perClient` of this client's.
    func acquire(client: String? = nil) -> Bool {
        var current = open.load(ordering: .relaxed)
        var counted = false
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged {
                counted = true
                break
            }
            current = original
        }
        guard counted else { return false }
        guard let client else { return true }
        let admitted = byClient.withLock { counts -> Bool in
            let n = counts[client, default: 0]
            guard n < perClient else { return false }
            counts[client] = n + 1
            return true
        }
        if !admitted { open.subtract(1, ordering: .acquiringAndReleasing) }
        return admitted
    }

    func release(client: String? = nil) {
        open.subtract(1, ordering: .acquiringAndReleasing)
        guard let client else { return }
        byClient.withLock { counts in
            guard let n = counts[client] else { return }
            if n <= 1 { counts[client] = nil } else { counts[client] = n - 1 }
        }
    }

    /// Open connections of `client`.
    func current(of client: String) -> Int { byClient.withLock { $0[client, default: 0] } }

    var current: Int { open.load(ordering: .relaxed) }
}

/// Closes a new connection at once when the cap is reached, in all or for its client (no answer, no handler), so
/// idle or slow sockets cannot take every file descriptor and starve the rest (`/healthz` and sign-ins of every other
/// client on a connection that is let in); counts the connection out when it closes.
final class ConnectionCap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    let count: ConnectionCount
    let refused: @Sendable () -> Void
    /// The peer's client key (nil: a trusted proxy, whose connections carry many clients).
    let clientKey: @Sendable (SocketAddress?) -> String?
    var client: String?
    var counted = false

    init(_ count: ConnectionCount, clientKey: @escaping @Sendable (SocketAddress?) -> String? = { _ in nil }, refused: @escaping @Sendable () -> Void) {
        self.count = count
        self.clientKey = clientKey
        self.refused = refused
    }

    func handlerAdded(context: ChannelHandlerContext) {
        client = clientKey(context.channel.remoteAddress)
        counted = count.acquire(client: client)
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
            count.release(client: client)
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
