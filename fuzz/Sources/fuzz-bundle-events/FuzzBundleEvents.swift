import Foundation
import FuzzSupport
import GatehouseClient

/// libFuzzer entry for the bundle event stream reader in GatehouseClient (`ServerSentEventParser`, what
/// `GET /v1/bundle/events` answers, read as it arrives), differential over the way the bytes arrive: the stream is fed
/// whole, then in chunks cut where the fuzzer chooses (including between a CR and its LF), then byte by byte; all three
/// must give the same events, or all refuse a line longer than the limit. Every event must be one the stream spelled:
/// no CR or LF in its type or id, no NUL in its id, no CR in its data.
public func fuzzBundleEvents(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    let cuts = (0..<input.below(8)).map { _ in input.below(65_536) }
    let stream = input.rest()
    let whole = run([stream[...]])
    var pieces: [ArraySlice<UInt8>] = []
    var start = 0
    for cut in cuts.map({ stream.isEmpty ? 0 : $0 % (stream.count + 1) }).sorted() where cut >= start {
        pieces.append(stream[start..<cut])
        start = cut
    }
    pieces.append(stream[start...])
    let chunked = run(pieces)
    if whole != chunked { finding("the events depend on how the bytes arrive (cuts \(cuts)): \(whole) vs \(chunked)") }
    if stream.count <= 4096, run(stream.indices.map { stream[$0...$0] }) != whole { finding("byte by byte gives other events") }
    guard case .success(let events) = whole else { return }
    for event in events {
        if event.event.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) || event.event.isEmpty { finding("an event type spelled \(Array(event.event.utf8))") }
        if let id = event.id, id.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) { finding("an event id spelled \(Array(id.utf8))") }
        if event.data.unicodeScalars.contains("\r") { finding("event data holding a CR") }
    }
}

enum Outcome: Equatable {
    case success([ServerSentEvent])
    case lineTooLong
}

func run(_ pieces: [ArraySlice<UInt8>]) -> Outcome {
    var parser = ServerSentEventParser()
    var events: [ServerSentEvent] = []
    do {
        for piece in pieces { events += try parser.feed(piece) }
    } catch {
        return .lineTooLong
    }
    return .success(events)
}
