import Foundation
import NIOCore
import PolicyModel
import ServiceLifecycle
import Synchronization

/// One installed version as `GET /v1/bundle/events` announces it: what to fetch and how to tell it apart, never
/// the policy itself (the bundle is fetched from `GET /v1/bundle`, with `If-None-Match`).
public struct BundleEvent: Sendable, Hashable {
    /// The bundle's strong ETag, quotes included: the event's `id`, so a client resumes by it (`Last-Event-ID`) on
    /// any replica over the same folder and key (they build byte-identical bundles), not by a replica's counter.
    public let etag: String
    /// The bundle's revision (a device refuses a lower one than it holds).
    public let revision: UInt64
    /// The policy version hash of the bundled set (`Gatehouse-Policy`).
    public let policyHash: String

    /// The Server-Sent Events frame: `id:` the ETag, `event: bundle`, one line of JSON data.
    public var frame: String {
        let data = JSONText.object([
            .init("etag", .string(etag)), .init("policyHash", .string(policyHash)), .init("revision", .int(Int(clamping: revision))),
        ]).rendered()
        return "id: \(etag)\nevent: bundle\ndata: \(data)\n\n"
    }
}

extension BundleEvent {
    /// The event naming the installed bundle `current` (in an extension, so the memberwise init stays).
    init(_ current: PolicyBundles.Current) {
        self.init(etag: current.etag, revision: current.manifest.revision, policyHash: current.manifest.policyHash)
    }
}

/// The open `GET /v1/bundle/events` streams of a server and what they are sent: the announced version, then one
/// event per version the reloader installs (never a refused one: a refusal installs nothing), and a heartbeat
/// comment every `heartbeat` so proxies keep an idle stream open.
///
/// Each stream has a bounded queue (`queueLimit` items; an item is an event or a heartbeat, a few hundred bytes).
/// A client that stops reading fills its socket's buffers, then its writer waits, then its queue: at the first item
/// that does not fit, its connection is closed and counted (`gatehouse_bundle_streams_dropped_total`). So an open
/// stream costs its queue, its connection's buffers (NIO's write watermark) and one suspended task, whatever the
/// client does. `perClientLimit` streams per client key (as the per-client rate limits count clients) at most.
public final class BundleEvents: Sendable {
    /// One item a stream writes.
    public enum Item: Sendable, Hashable {
        case event(BundleEvent)
        case heartbeat
    }

    /// Why a stream was not opened.
    public enum Refusal: Error, Sendable {
        /// `perClientLimit` streams of this client are open.
        case tooManyFromClient
        /// The server is shutting down.
        case closed
    }

    /// An open stream: the event to send first (nil when the client's `Last-Event-ID` names the announced version),
    /// then `items` until the server drops or closes it.
    public final class Subscription: Sendable {
        /// The event sent first, before any item.
        public let initial: BundleEvent?
        /// The events and heartbeats to send, in order; finishes when the stream is dropped or closed.
        public let items: AsyncStream<Item>
        let id: UInt64
        let owner: BundleEvents

        init(id: UInt64, initial: BundleEvent?, items: AsyncStream<Item>, owner: BundleEvents) {
            self.id = id
            self.initial = initial
            self.items = items
            self.owner = owner
        }

        /// Ends the stream (its `items` finish) and counts it out.
        public func cancel() { owner.remove(id, dropped: false) }
    }

    private struct Subscriber {
        let continuation: AsyncStream<Item>.Continuation
        let client: String
        /// Closes the stream's connection (a client dropped for not reading: its writer is stuck in a write).
        let close: @Sendable () -> Void
    }

    private struct State {
        var announced: BundleEvent?
        var subscribers: [UInt64: Subscriber] = [:]
        var perClient: [String: Int] = [:]
        var next: UInt64 = 0
        var closed = false
        var dropped = 0
    }

    /// How often every stream is sent a heartbeat comment.
    public let heartbeat: Duration
    /// Items a stream may have waiting; past it the stream is dropped.
    public let queueLimit: Int
    /// Streams open per client key at most.
    public let perClientLimit: Int
    private let state = Mutex(State())
    private let observe: @Sendable (_ open: Int, _ dropped: Bool) -> Void

    /// Streams telling of `announced` first; `observe` is told the open count at each open and close, and whether a
    /// close was a drop.
    public init(
        announced: BundleEvent? = nil, heartbeat: Duration = .seconds(15), queueLimit: Int = 8, perClientLimit: Int = 64,
        observe: @escaping @Sendable (_ open: Int, _ dropped: Bool) -> Void = { _, _ in }
    ) {
        self.heartbeat = heartbeat
        self.queueLimit = max(1, queueLimit)
        self.perClientLimit = max(1, perClientLimit)
        self.observe = observe
        state.withLock { $0.announced = announced }
    }

    /// The version announced last (the one deciding now).
    public var announced: BundleEvent? { state.withLock { $0.announced } }
    /// Streams open now.
    public var openCount: Int { state.withLock { $0.subscribers.count } }
    /// Streams dropped since start because their client did not read.
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Opens a stream for `client`. Reading the announced version and joining the subscribers is one step, so a
    /// version installed meanwhile is either the initial event or the first item, never missed.
    public func subscribe(client: String, lastEventID: String?, close: @escaping @Sendable () -> Void = {}) -> Result<Subscription, Refusal> {
        let (stream, continuation) = AsyncStream<Item>.makeStream(bufferingPolicy: .bufferingOldest(queueLimit))
        let opened: Result<Subscription, Refusal> = state.withLock { s in
            if s.closed { return .failure(.closed) }
            if s.perClient[client, default: 0] >= perClientLimit { return .failure(.tooManyFromClient) }
            s.next += 1
            let id = s.next
            s.subscribers[id] = Subscriber(continuation: continuation, client: client, close: close)
            s.perClient[client, default: 0] += 1
            // Resuming at the version announced: nothing was missed. Any other id (an older version, one from before a
            // restart, another replica's older one): the announced version, the only one worth fetching.
            let initial = s.announced.flatMap { lastEventID?.trimmingCharacters(in: .whitespaces) == $0.etag ? nil : $0 }
            return .success(Subscription(id: id, initial: initial, items: stream, owner: self))
        }
        switch opened {
        case .success(let subscription):
            let id = subscription.id
            continuation.onTermination = { [weak self] _ in self?.remove(id, dropped: false) }
            observe(openCount, false)
        case .failure:
            continuation.finish()
        }
        return opened
    }

    /// Announces an installed version to every open stream (once per ETag: a rebuild that kept the bundle sends
    /// nothing).
    public func announce(_ event: BundleEvent) {
        let sent: Bool = state.withLock { s in
            if s.announced?.etag == event.etag { return false }
            if let held = s.announced, held.revision > event.revision { return false }
            s.announced = event
            return true
        }
        if sent { send(.event(event)) }
    }

    /// Sends the heartbeat comment to every open stream.
    public func sendHeartbeat() { send(.heartbeat) }

    /// Ends every stream and opens no more (shutdown).
    public func closeAll() {
        let ending = state.withLock { s in
            s.closed = true
            return Array(s.subscribers.values)
        }
        for subscriber in ending { subscriber.continuation.finish() }
    }

    private func send(_ item: Item) {
        let subscribers = state.withLock { Array($0.subscribers) }
        for (id, subscriber) in subscribers {
            if case .dropped = subscriber.continuation.yield(item) {
                // Its queue is full: the client has not read for `queueLimit` items past its buffers.
                remove(id, dropped: true)
                subscriber.close()
            }
        }
    }

    fileprivate func remove(_ id: UInt64, dropped: Bool) {
        let removed: Subscriber? = state.withLock { s in
            guard let subscriber = s.subscribers.removeValue(forKey: id) else { return nil }
            let left = s.perClient[subscriber.client, default: 1] - 1
            s.perClient[subscriber.client] = left > 0 ? left : nil
            if dropped { s.dropped += 1 }
            return subscriber
        }
        guard let removed else { return }
        removed.continuation.finish()
        observe(openCount, dropped)
    }
}

/// Sends the heartbeat to every open bundle stream every `events.heartbeat`, until the server shuts down (one timer
/// for all streams, not one per connection).
struct BundleHeartbeatService: Service {
    let events: BundleEvents

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: events.heartbeat)
                events.sendHeartbeat()
            }
        }
        events.closeAll()
    }
}
