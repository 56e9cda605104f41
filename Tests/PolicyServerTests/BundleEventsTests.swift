import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyBundle
@testable import PolicyServer
import Testing
import GatehouseTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `BundleEvents` alone: what a stream is sent first, once per version, never backwards, the per-client cap, and a
/// subscriber that does not read dropped and counted.
struct BundleEventsUnitTests {
    /// A value shared with a `@Sendable` closure.
    final class Shared<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
    }

    static func event(_ n: UInt64) -> BundleEvent { BundleEvent(etag: "\"e\(n)\"", revision: n, policyHash: "h\(n)") }

    /// The items a subscription has waiting now (the stream is finished first, so the loop ends).
    static func drain(_ subscription: BundleEvents.Subscription) async -> [BundleEvents.Item] {
        subscription.cancel()
        var items: [BundleEvents.Item] = []
        for await item in subscription.items { items.append(item) }
        return items
    }

    @Test func theAnnouncedVersionComesFirstUnlessLastEventIDNamesIt() throws {
        let events = BundleEvents(announced: Self.event(1))
        let fresh = try events.subscribe(client: "a", lastEventID: nil).get()
        #expect(fresh.initial == Self.event(1))
        let resumed = try events.subscribe(client: "a", lastEventID: "\"e1\"").get()
        #expect(resumed.initial == nil)
        // An id this server never announced (another replica's older version, one from before a restart): the current.
        let other = try events.subscribe(client: "a", lastEventID: "\"e0\"").get()
        #expect(other.initial == Self.event(1))
        #expect(events.openCount == 3)
        fresh.cancel()
        resumed.cancel()
        other.cancel()
        #expect(events.openCount == 0)
    }

    @Test func eachVersionIsSentOnceAndNeverAnOlderOne() async throws {
        let events = BundleEvents(announced: Self.event(1))
        let subscription = try events.subscribe(client: "a", lastEventID: "\"e1\"").get()
        events.announce(Self.event(1))  // the version already announced: nothing
        events.announce(Self.event(3))
        events.announce(Self.event(3))
        events.announce(Self.event(2))  // older than the one announced: nothing
        events.sendHeartbeat()
        #expect(await Self.drain(subscription) == [.event(Self.event(3)), .heartbeat])
        #expect(events.announced == Self.event(3))
    }

    @Test func streamsPerClientAreCapped() throws {
        let events = BundleEvents(announced: Self.event(1), perClientLimit: 2)
        let first = try events.subscribe(client: "a", lastEventID: nil).get()
        let second = try events.subscribe(client: "a", lastEventID: nil).get()
        defer { second.cancel() }
        guard case .failure(.tooManyFromClient) = events.subscribe(client: "a", lastEventID: nil) else {
            Issue.record("a third stream of one client was opened")
            return
        }
        #expect((try? events.subscribe(client: "b", lastEventID: nil).get()) != nil)
        first.cancel()
        #expect((try? events.subscribe(client: "a", lastEventID: nil).get()) != nil)
    }

    @Test func aSubscriberThatDoesNotReadIsDroppedAndCountedAtItsQueueLimit() async throws {
        let closed = Shared(false)
        let observed = Shared<[Bool]>([])
        let events = BundleEvents(announced: Self.event(1), queueLimit: 4) { _, dropped in observed.value.withLock { $0.append(dropped) } }
        let reader = try events.subscribe(client: "a", lastEventID: "\"e1\"").get()
        let stuck = try events.subscribe(client: "b", lastEventID: "\"e1\"") { closed.value.withLock { $0 = true } }.get()
        for _ in 0..<4 { events.sendHeartbeat() }
        #expect(events.openCount == 2)
        #expect(!closed.value.withLock { $0 })
        // The reader reads; the stuck one does not: the fifth item does not fit in its queue.
        var readerItems = 0
        for await _ in reader.items {
            readerItems += 1
            if readerItems == 4 { break }
        }
        events.sendHeartbeat()
        #expect(closed.value.withLock { $0 })
        #expect(events.droppedCount == 1)
        #expect(observed.value.withLock { $0.filter { $0 }.count } == 1)
        #expect(events.openCount == 1)
        // What it had queued is bounded: the four items, then the end.
        #expect(await Self.drain(stuck).count == 4)
    }

    @Test func closingAllEndsEveryStreamAndOpensNoMore() async throws {
        let events = BundleEvents(announced: Self.event(1))
        let subscription = try events.subscribe(client: "a", lastEventID: "\"e1\"").get()
        events.closeAll()
        var count = 0
        for await _ in subscription.items { count += 1 }
        #expect(count == 0)
        guard case .failure(.closed) = events.subscribe(client: "a", lastEventID: nil) else {
            Issue.record("a stream opened after shutdown")
            return
        }
    }

    @Test func theFrameCarriesWhatToFetchAndNoPolicy() {
        let frame = BundleEvent(etag: "\"abc\"", revision: 7, policyHash: "h").frame
        #expect(frame == "id: \"abc\"\nevent: bundle\ndata: {\"etag\":\"\\\"abc\\\"\",\"policyHash\":\"h\",\"revision\":7}\n\n")
    }
}

/// `GET /v1/bundle/events` on a live port: the current version on connect, an event per installed version (none for
/// a refused one), resumed by Last-Event-ID after a cut, 404 without a key, and open streams closed at shutdown.
@Suite(.startsServers) struct BundleEventsRouteTests {
    static let key = BundleSigningKey()

    func server(_ configure: (inout ServerSettings) -> Void = { _ in }) throws -> TestServer {
        try TestServer {
            $0.bundleKey = Self.key
            configure(&$0)
        }
    }

    /// Opens a stream on `port` and reads until `until` holds for what was read (or `seconds` pass).
    static func open(port: Int, lastEventID: String? = nil) throws -> RawConnection {
        let connection = try RawConnection(port: port)
        var text = "GET /v1/bundle/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if let lastEventID { text += "Last-Event-ID: \(lastEventID)\r\n" }
        try connection.send(text + "\r\n")
        return connection
    }

    @Test func aStreamGetsTheVersionOnConnectAndOneEventPerInstalledVersionButNoneForARefusal() async throws {
        let t = try server { $0.bundleHeartbeat = .milliseconds(200) }
        let first = try #require(t.server.bundles?.current)
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let stream = try Self.open(port: port)
            let opened = try await onThread { stream.read(until: { $0.contains("event: bundle") && $0.contains("\n\n") }, within: 60) }
            #expect(opened.contains("HTTP/1.1 200"))
            #expect(opened.lowercased().contains("content-type: text/event-stream"))
            #expect(opened.lowercased().contains("x-accel-buffering: no"))
            #expect(opened.contains("id: \(first.etag)"))
            #expect(opened.contains("\"revision\":\(first.manifest.revision)"))
            // No policy content in an event: neither a rule's text nor a file name.
            #expect(!opened.contains("yaml") && !opened.contains("AI Suggestions"))
            // Heartbeats keep it open.
            let beat = try await onThread { stream.read(until: { $0.contains(": heartbeat") }, within: 60) }
            #expect(beat.contains(": heartbeat"))

            // A refused version sends nothing; the next good one sends its event.
            let original = try t.read("tiers.yaml")
            try t.write("tiers.yaml", "tiers: [unclosed\n")
            guard case .refused = await t.server.reloader.reload() else {
                Issue.record("a broken set was not refused")
                return
            }
            try t.write("tiers.yaml", original.replacingOccurrences(of: "AI Suggestions", with: "AI Ideas"))
            guard case .installed(let version) = await t.server.reloader.reload() else {
                Issue.record("the fixed set was not installed")
                return
            }
            let next = try #require(t.server.bundles?.current)
            let after = try await onThread { stream.read(until: { $0.contains("\"policyHash\":\"\(version.hash)\"") }, within: 60) }
            #expect(after.contains("id: \(next.etag)"))
            let events = after.components(separatedBy: "event: bundle").count - 1
            #expect(events == 1)
            #expect(after.contains(version.hash))
            #expect(next.manifest.revision > first.manifest.revision)

            // A cut stream resumed with the last id it saw: nothing missed, nothing sent again.
            let resumed = try Self.open(port: port, lastEventID: next.etag)
            let head = try await onThread { resumed.read(until: { $0.contains("retry:") && $0.contains(": heartbeat") }, within: 60) }
            #expect(!head.contains("event: bundle"))
            // Resumed with an older id (the stream was cut before the last version): that version at once.
            let behind = try Self.open(port: port, lastEventID: first.etag)
            let caughtUp = try await onThread { behind.read(until: { $0.contains("id: \(next.etag)") }, within: 60) }
            #expect(caughtUp.contains("id: \(next.etag)"))
            #expect(t.server.bundleEvents?.openCount == 3)
        }
    }

    @Test func withoutAKeyTheStreamIsAProblem404() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/bundle/events", method: .get) { r in
                #expect(r.status == .notFound)
                #expect(r.headers[.contentType] == "application/problem+json")
            }
        }
    }

    @Test func streamsPastThePerClientCapAre429() async throws {
        let t = try server { $0.bundleStreamsPerClient = 1 }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let held = try Self.open(port: port)
            _ = try await onThread { held.read(until: { $0.contains("event: bundle") }, within: 60) }
            let refused = try await onThread { try RawConnection.exchange(port: port, "GET", "/v1/bundle/events") }
            #expect(refused?.status == 429)
            #expect(refused?.headers["retry-after"] != nil)
        }
    }

    /// Shutdown with streams open: each stream ends (the client reads the end) and the server stops, rather than
    /// waiting for the streams forever.
    @Test func shutdownEndsOpenStreams() async throws {
        let t = try server()
        let streams = BundleEventsUnitTests.Shared<[RawConnection]>([])
        let started = ContinuousClock.now
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            for _ in 0..<3 {
                let stream = try Self.open(port: port)
                _ = try await onThread { stream.read(until: { $0.contains("event: bundle") }, within: 60) }
                streams.value.withLock { $0.append(stream) }
            }
            #expect(t.server.bundleEvents?.openCount == 3)
        }
        // `test(.live)` returned: the graceful shutdown finished with the streams open at its start.
        #expect(ContinuousClock.now - started < TestDeadlines.read)
        for stream in streams.value.withLock({ $0 }) {
            #expect(try await onThread { stream.closedByPeer(within: 30) })
        }
        #expect(t.server.bundleEvents?.openCount == 0)
    }

    /// A client that never reads: the server's writes fill its socket, then its queue; it is dropped, the connection
    /// closed, and `/metrics` counts it, while the server keeps serving.
    @Test func aClientThatNeverReadsIsDroppedAndCounted() async throws {
        let t = try server { $0.bundleStreamQueue = 4 }
        let events = try #require(t.server.bundleEvents)
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let stuck = try Self.open(port: port)
            var small: Int32 = 4096
            setsockopt(stuck.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            for _ in 0..<200 where events.openCount == 0 { try await Task.sleep(for: .milliseconds(20)) }
            #expect(events.openCount == 1)
            // Versions as fast as they can be announced (each a new ETag and revision), until the stream is dropped.
            let base = events.announced?.revision ?? 0
            var n: UInt64 = 0
            while events.droppedCount == 0, n < 2_000_000 {
                n += 1
                events.announce(BundleEvent(etag: "\"synthetic-\(n)\"", revision: base + n, policyHash: String(repeating: "h", count: 200)))
                if n % 64 == 0 { await Task.yield() }
            }
            #expect(events.droppedCount == 1)
            #expect(events.openCount == 0)
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(String(buffer: r.body).contains("gatehouse_bundle_streams_dropped_total 1"))
            }
        }
    }
}

extension RawConnection {
    /// Reads until `until` holds for all the text read (or `seconds` pass); returns what was read.
    func read(until: (String) -> Bool, within seconds: Double) -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while Date() < deadline {
            let text = String(decoding: bytes, as: UTF8.self)
            if until(text) { return text }
            guard readable(within: 50) else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
