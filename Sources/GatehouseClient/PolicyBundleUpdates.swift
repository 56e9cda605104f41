import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import GatehouseEngine
import Synchronization

/// How the bundle event stream reconnects after a cut: the n-th attempt in a row waits a random time between half
/// and all of `min(maximum, base × 2^(n-1))` (jittered, so a thousand devices cut at once do not come back at once).
public struct PolicyBundleUpdateBackoff: Sendable, Hashable {
    /// The wait before the first reconnection (at most; jittered down to half).
    public var base: Duration
    /// The longest wait, however many reconnections failed.
    public var maximum: Duration

    /// Backoff from `base`, doubling to `maximum`.
    public init(base: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.base = base
        self.maximum = maximum
    }

    /// The wait before the `attempt`-th reconnection in a row (1 for the first).
    public func delay(attempt: Int) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maximum, base * (1 << exponent))
        return ceiling * Double.random(in: 0.5...1.0)
    }
}

extension GatehouseClient {
    /// Keeps the device's bundle current by listening to `GET /v1/bundle/events` (Server-Sent Events): each event
    /// names a version the server installed (its ETag and revision, no policy), and the client fetches the bundle
    /// with `If-None-Match` and installs it through `policyBundles` (verified against the pinned key, never a
    /// downgrade), so a policy change reaches the device about as soon as the server installs it.
    ///
    /// A cut stream is reopened with `Last-Event-ID` (the ETag last announced, the same on every replica over one
    /// folder and key) after `backoff`; a stream the server or a proxy refuses (no bundle key, an old server, an
    /// answer that is not an event stream) falls back to polling `GET /v1/bundle` every `pollingInterval`, trying the
    /// stream again at each poll. Replaces `startPolicyBundleRefresh`; runs until `stopPolicyBundleUpdates()` or the
    /// client goes away. `policyRevisions()` streams each revision installed.
    public func startPolicyBundleUpdates(pollingInterval: Duration = .seconds(60), backoff: PolicyBundleUpdateBackoff = .init()) {
        stopPolicyBundleRefresh()
        bundleUpdates?.cancel()
        let url = serverURL.appendingPathComponent("v1/bundle/events")
        let session = urlSession
        bundleUpdates = Task { [weak self] in
            var lastEventID = self?.heldBundleETag
            var failures = 0
            while !Task.isCancelled {
                let connection = BundleEventConnection(url: url, lastEventID: lastEventID, session: session)
                var outcome = BundleStreamOutcome.ended
                var opened = false
                var parser = ServerSentEventParser()
                do {
                    chunks: for try await chunk in connection.chunks {
                        switch chunk {
                        case .opened(let status, let contentType, let retryAfter):
                            guard status == 200, contentType?.lowercased().hasPrefix("text/event-stream") == true else {
                                outcome = .refused(status: status, retryAfter: retryAfter)
                                break chunks
                            }
                            opened = true
                            failures = 0
                        case .bytes(let data):
                            for event in try parser.feed(data) where event.event == "bundle" {
                                if let id = event.id { lastEventID = id }
                                await self?.bundleAnnounced(event.data)
                            }
                        }
                    }
                } catch {
                    outcome = .ended
                }
                connection.cancel()
                if Task.isCancelled { break }
                let wait: Duration
                switch outcome {
                case .refused(let status, let retryAfter) where status == 429 || status == 503:
                    // Open streams are capped, or the server is not ready: poll once, come back later.
                    failures += 1
                    _ = try? await self?.refreshPolicyBundle()
                    wait = max(backoff.delay(attempt: failures), .seconds(retryAfter ?? 0))
                case .refused:
                    // No stream here (no bundle key, an older server, a proxy's page): poll, and try again at the next poll.
                    _ = try? await self?.refreshPolicyBundle()
                    wait = pollingInterval
                case .ended:
                    // Cut (a proxy's timeout, a restart, the network): reconnect soon; after a failed reconnection, poll
                    // once too, so a version installed while the stream was down is not waited for.
                    failures = opened ? 1 : failures + 1
                    if failures > 1 { _ = try? await self?.refreshPolicyBundle() }
                    wait = backoff.delay(attempt: failures)
                }
                guard self != nil else { return }
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// Stops listening (and the fallback polling). The bundle held keeps deciding.
    public func stopPolicyBundleUpdates() {
        bundleUpdates?.cancel()
        bundleUpdates = nil
    }

    /// The revision of each bundle installed from now on, the one held (if any) first: for an app that shows which
    /// policy version it decides with. Ends when the task iterating it is cancelled.
    public nonisolated func policyRevisions() -> AsyncStream<UInt64> {
        revisionFeeds.subscribe(current: policyBundles?.current?.manifest.revision)
    }

    /// The ETag of the bundle held (it is the SHA-256 of its bytes, so it survives a relaunch).
    nonisolated var heldBundleETag: String? {
        policyBundles?.current.map { PolicyBundle.entityTag(of: $0.bytes) }
    }

    /// One event's data: fetch unless it names the bundle held, or an older revision (a replica behind the others).
    func bundleAnnounced(_ data: String) async {
        guard let store = policyBundles else { return }
        let notice = try? JSONDecoder().decode(BundleNotice.self, from: Data(data.utf8))
        if let notice, let held = store.current {
            if notice.etag == PolicyBundle.entityTag(of: held.bytes) || notice.revision < held.manifest.revision { return }
        }
        _ = try? await refreshPolicyBundle()
    }
}

/// The data of a `bundle` event.
struct BundleNotice: Decodable {
    var etag: String
    var revision: UInt64
    var policyHash: String
}

enum BundleStreamOutcome {
    /// The server answered something other than an event stream.
    case refused(status: Int, retryAfter: Int?)
    /// The stream ended or failed (connection cut, server shut down).
    case ended
}

/// The installed revisions' subscribers (`policyRevisions()`).
final class RevisionFeeds: Sendable {
    private let feeds = Mutex<[UUID: AsyncStream<UInt64>.Continuation]>([:])

    func subscribe(current: UInt64?) -> AsyncStream<UInt64> {
        let (stream, continuation) = AsyncStream<UInt64>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        if let current { continuation.yield(current) }
        continuation.onTermination = { [weak self] _ in _ = self?.feeds.withLock { $0.removeValue(forKey: id) } }
        feeds.withLock { $0[id] = continuation }
        return stream
    }

    func send(_ revision: UInt64) {
        for continuation in feeds.withLock({ Array($0.values) }) { continuation.yield(revision) }
    }
}

/// A Server-Sent Event (the fields Gatehouse sends).
package struct ServerSentEvent: Equatable {
    package var id: String?
    package var event: String
    package var data: String
}

/// Parses `text/event-stream` bytes as they arrive (WHATWG HTML, "Parsing an event stream"): lines end with CR, LF
/// or CRLF; `:` starts a comment; a blank line dispatches the event. A line longer than `lineLimit` is an error, so a
/// server or proxy that never ends a line cannot grow the buffer without bound.
package struct ServerSentEventParser {
    package struct LineTooLong: Error {}
    package static let lineLimit = 64 * 1024
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: String?
    private var event = ""
    private var data: [String] = []
    private var hasData = false

    package init() {}

    package mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if byte == 0x0A && lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = byte == 0x0D
            if byte == 0x0A || byte == 0x0D {
                if let event = endLine() { events.append(event) }
                continue
            }
            guard line.count < Self.lineLimit else { throw LineTooLong() }
            line.append(byte)
        }
        return events
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                event = ""
                data = []
                hasData = false
            }
            guard hasData else { return nil }
            return ServerSentEvent(id: id, event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"))
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let text = String(decoding: line, as: UTF8.self)
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = Substring(text)
            value = ""
        }
        switch field {
        // By scalars: Foundation's `contains` on Linux can miss U+0000 (the bundle-events fuzz target found such an id).
        case "id": if !value.unicodeScalars.contains("\0") { id = String(value) }
        case "event": event = String(value)
        case "data":
            data.append(String(value))
            hasData = true
        default: break
        }
        return nil
    }
}

/// One `GET /v1/bundle/events` request, its answer's head and then its bytes as they arrive.
///
/// A data task with a delegate, on every platform: swift-corelibs-foundation (Linux) has no `bytes(for:)`, and its
/// delegate receives each chunk as it is read, as Apple's does. The session is the app's configuration, its own
/// delegate; it is invalidated when the request ends.
final class BundleEventConnection: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Chunk: Sendable {
        case opened(status: Int, contentType: String?, retryAfter: Int?)
        case bytes(Data)
    }

    let chunks: AsyncThrowingStream<Chunk, any Error>
    private let continuation: AsyncThrowingStream<Chunk, any Error>.Continuation
    /// Read and written on the delegate queue only (serial).
    private var sawResponse = false
    private let task = Mutex<URLSessionDataTask?>(nil)

    init(url: URL, lastEventID: String?, session: URLSession) {
        // A bounded buffer: a client that stops iterating (never, here) cannot grow it; 256 chunks is far past a stream's rate.
        let made = AsyncThrowingStream<Chunk, any Error>.makeStream(bufferingPolicy: .bufferingOldest(256))
        chunks = made.stream
        continuation = made.continuation
        super.init()
        let configuration = session.configuration.copy() as! URLSessionConfiguration
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let own = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        var request = URLRequest(url: url)
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        if let lastEventID { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
        // Silence longer than four heartbeats is a dead stream.
        request.timeoutInterval = 60
        let task = own.dataTask(with: request)
        self.task.withLock { $0 = task }
        continuation.onTermination = { [weak self] _ in self?.cancel() }
        task.resume()
        own.finishTasksAndInvalidate()
    }

    /// Cancels the request (its stream ends).
    func cancel() {
        task.withLock { $0 }?.cancel()
    }

    private func announceResponse(_ response: URLResponse?) {
        guard !sawResponse, let http = response as? HTTPURLResponse else { return }
        sawResponse = true
        let retryAfter = (http.value(forHTTPHeaderField: "Retry-After")).flatMap { Int($0) }
        continuation.yield(.opened(status: http.statusCode, contentType: http.value(forHTTPHeaderField: "Content-Type"), retryAfter: retryAfter))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        announceResponse(dataTask.response)
        if case .dropped = continuation.yield(.bytes(data)) {
            continuation.finish(throwing: URLError(.dataLengthExceedsMaximum))
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        announceResponse(task.response)
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
    }
}
