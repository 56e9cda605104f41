import Foundation
import PolicyModel
import Testing

/// `Timestamp.parseCommon` reads the 20-byte form `YYYY-MM-DDTHH:MM:SSZ` as three words, and the request reader
/// takes it without scanning the string: both must give what the byte-by-byte `parseGeneral` gives, for every
/// 20-byte text (valid or not), and a reused request must not keep a string of the line before.
@Suite struct TimestampCommonFormTests {
    static let valid = Array("2026-11-22T12:00:00Z".utf8)

    static func both(_ bytes: [UInt8]) -> (Date?, Date?) {
        bytes.withUnsafeBufferPointer { b in (Timestamp.parseCommon(b.baseAddress!), Timestamp.parseGeneral(utf8: b)) }
    }

    @Test func agreesWithTheGeneralParserOnEverySingleByteChange() {
        #expect(Self.both(Self.valid).0 == Self.both(Self.valid).1)
        #expect(Self.both(Self.valid).0 != nil)
        for i in 0..<20 {
            for b in 0...255 {
                var bytes = Self.valid
                bytes[i] = UInt8(b)
                let (common, general) = Self.both(bytes)
                #expect(common == general, "\(String(decoding: bytes, as: UTF8.self)) at \(i)")
            }
        }
    }

    @Test func agreesOnGeneratedDatesAtTheEdges() {
        var generator = SystemRandomNumberGenerator()
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        for _ in 0..<20_000 {
            let year = [1582, 1583, 1600, 1700, 1900, 2000, 2024, 2026, 2100, 9999, Int.random(in: 0...9999, using: &generator)].randomElement()!
            let month = Int.random(in: 0...13, using: &generator)
            let day = Int.random(in: 0...32, using: &generator)
            let hour = Int.random(in: 0...25, using: &generator)
            let minute = Int.random(in: 0...61, using: &generator)
            let second = Int.random(in: 0...61, using: &generator)
            let y = String(repeating: "0", count: 4 - String(year).count) + String(year)
            let text = "\(y)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))Z"
            let (common, general) = Self.both(Array(text.utf8))
            #expect(common == general, "\(text)")
        }
    }

    @Test func readsTheSameThroughTheRequestReader() throws {
        for text in ["2026-11-22T12:00:00Z", "2024-02-29T23:59:59Z", "1583-01-01T00:00:00Z", "2026-11-22T12:00:00.5Z"] {
            let json = #"{"action":"a","resource":{"type":"t"},"context":{"now":"\#(text)"}}"#
            let request = try Request(json: json)
            #expect(request.context.now == Timestamp.parse(text), "\(text)")
        }
        #expect(throws: RequestError.self) { try Request(json: #"{"action":"a","resource":{"type":"t"},"context":{"now":"2026-02-29T12:00:00Z"}}"#) }
    }

    @Test func aReusedRequestKeepsNoStringOfTheLineBefore() throws {
        let reader = RequestReader()
        var request = Request(action: "", resource: Resource(type: ""))
        let full = #"{"subject":{"id":"u1","tier":"pro","auth":{"method":"pin"}},"action":"a","resource":{"type":"t","id":"r1","ownerId":"u1"}}"#
        let bare = #"{"action":"b","resource":{"type":"s"}}"#
        let partial = #"{"subject":{"tier":"free"},"action":"c","resource":{"type":"t","ownerId":"u2"}}"#
        for (text, expected) in [(full, try Request(json: full)), (bare, try Request(json: bare)), (full, try Request(json: full)),
                                 (partial, try Request(json: partial))] {
            try Array(text.utf8).withUnsafeBytes { try reader.read($0, into: &request) }
            #expect(request.subject == expected.subject)
            #expect(request.action == expected.action)
            #expect(request.resource == expected.resource)
        }
        // A line refused halfway, then a good one: the good one reads as if alone.
        _ = try? Array(#"{"subject":{"id":"zz"},"action":"x","resource":{"type":1}}"#.utf8).withUnsafeBytes { try reader.read($0, into: &request) }
        try Array(bare.utf8).withUnsafeBytes { try reader.read($0, into: &request) }
        #expect(request == (try Request(json: bare)).withNow(request.context.now))
    }
}

extension Request {
    fileprivate func withNow(_ now: Date?) -> Request {
        var copy = self
        copy.context.now = now
        return copy
    }
}
