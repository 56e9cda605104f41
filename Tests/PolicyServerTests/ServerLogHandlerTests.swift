import Logging
import Synchronization
import Testing

@testable import PolicyServer

/// The server's log handler renders metadata only when it writes a line; what it writes must be exactly what
/// swift-log's `StreamLogHandler` writes for the same logger.
@Suite struct ServerLogHandlerTests {
    final class Captured: TextOutputStream, @unchecked Sendable {
        let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    /// Drops the timestamp each line starts with (two loggers never write in the same second for sure).
    static func lines(_ c: Captured) -> [Substring] {
        c.text.withLock { $0 }.split(separator: "\n").map { $0.drop(while: { $0 != " " }) }
    }

    @Test func writesWhatTheStreamHandlerWrites() {
        let mine = Captured()
        let theirs = Captured()
        let provider = Logger.MetadataProvider { ["trace_id": "t-1"] }
        var ours = Logger(label: "gatehouse") { label in
            ServerLogHandler(label: label, metadataProvider: provider, logLevel: .info) { label, provider in
                StreamLogHandler(label: label, stream: mine, metadataProvider: provider)
            }
        }
        var stream = Logger(label: "gatehouse") { label in
            var h = StreamLogHandler(label: label, stream: theirs, metadataProvider: provider)
            h.logLevel = .info
            return h
        }
        ours[metadataKey: "hb.request.id"] = "abc-1"
        stream[metadataKey: "hb.request.id"] = "abc-1"
        ours[metadataKey: "policy.hash"] = .string("e3")
        stream[metadataKey: "policy.hash"] = .string("e3")
        for logger in [ours, stream] {
            logger.info("policy loaded", metadata: ["extra": "1"], source: "PolicyServer")
            logger.debug("not written")
            logger.error("refused", metadata: ["n": .stringConvertible(3)])
        }
        #expect(Self.lines(mine).count == 2)
        #expect(Self.lines(mine) == Self.lines(theirs))
        #expect(ours[metadataKey: "hb.request.id"] == "abc-1")
        #expect(ours.logLevel == .info)
    }
}
