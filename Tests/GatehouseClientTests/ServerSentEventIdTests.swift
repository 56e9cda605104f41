@testable import GatehouseClient
import Testing

/// An event id holding U+0000 is ignored, as the event stream's rules say (WHATWG HTML, "last event ID"): the id
/// becomes the `Last-Event-ID` a reconnecting client sends, where a NUL has no place. `value.contains("\0")` missed it
/// on Linux, where Foundation's `StringProtocol.contains` does not see U+0000 (found by the `bundle-events` fuzz target,
/// 2026-11-29; its input is the seed `found-nul-in-event-id.bin`).
@Suite struct ServerSentEventIdTests {
    static func events(_ bytes: [UInt8]) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        return try parser.feed(bytes[...])
    }

    @Test(arguments: [
        Array("id: a\u{0}b\ndata: x\n\n".utf8),
        Array("id:\u{0}\ndata: x\n\n".utf8),
        // The fuzzer's stream (after its first byte, the chunking choice): invalid UTF-8, then a NUL, in the id.
        [0x31, 0x0A, 0x69, 0x64, 0x3A, 0x80, 0xEF, 0xDB, 0xDB, 0xA6, 0xDB, 0xDB, 0xDB, 0x0E, 0x00, 0xDB, 0x9B, 0x0A, 0x64, 0x0D,
         0x64, 0x61, 0x74, 0x61, 0x3A, 0x63, 0x0A, 0x0A, 0x2D, 0x0D, 0x64, 0x61, 0x74, 0x61, 0x3A, 0x63, 0x0A, 0x0A],
    ])
    func anIdHoldingNULIsIgnored(stream: [UInt8]) throws {
        let events = try Self.events(stream)
        #expect(!events.isEmpty)
        for event in events { #expect(event.id == nil, "\(event.id.map { Array($0.unicodeScalars.map(\.value)) } ?? [])") }
    }

    @Test func anIdWithoutNULIsKept() throws {
        #expect(try Self.events(Array("id: v42\ndata: x\n\n".utf8)).first?.id == "v42")
    }
}
