import Foundation
import GatehouseTestSupport
import Testing

@testable import PolicyModel

/// `Timestamp.format` writes RFC 3339 by hand for the years 1900 to 9999; its text must be Foundation's
/// `ISO8601FormatStyle`'s (decision records, answers and the console show it, and `policy replay` reads it back),
/// but for a time less than one ulp below a millisecond (`TimestampRoundTripTests`).
@Suite struct TimestampFormatTests {
    static func foundation(_ date: Date) -> String {
        date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
            ? date.formatted(Date.ISO8601FormatStyle()) : date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Foundation's text, or, for a time less than one ulp below a millisecond, Foundation's text of that millisecond.
    static func expected(_ date: Date) -> Set<String> {
        let r = date.timeIntervalSinceReferenceDate
        return [foundation(date), foundation(Date(timeIntervalSinceReferenceDate: r + r.ulp))]
    }

    @Test func theTextIsFoundationsForDatesAcrossTheRange() {
        var random = SeededRandom(seed: 20_261_128)
        let low = -2_208_988_800.0, high = 253_402_300_799.0
        for i in 0..<20_000 {
            let whole = low + Double(random.next() % UInt64(high - low))
            // Whole seconds, whole milliseconds (the times the server keeps), and fractions below the millisecond.
            let fraction: Double =
                switch i % 3 {
                case 0: 0
                case 1: Double(random.next() % 1000) / 1000
                default: Double(random.next() % 1_000_000_000) / 1_000_000_000
                }
            let date = Date(timeIntervalSince1970: whole + fraction)
            #expect(Self.expected(date).contains(Timestamp.format(date)), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func theTextIsFoundationsAtTheEdges() {
        let seconds: [Double] = [
            0, -0.0005, -0.001, -1e-9, 1e-9, 0.0009999, 0.001, 86_399.9995, 951_782_400, 951_868_799.999,
            1_798_979_101.211, 1_753_264_708.3, 1_777_313_939.8009999, 1_795_000_060.9999999, -2_208_988_800,
            -2_208_988_800.0001, -2_208_988_799.5, 253_402_300_799.999, 253_402_300_799, 253_402_300_800, 253_402_300_800.5,
            -62_135_596_800, 1e12, -1e11,
        ]
        for s in seconds {
            let date = Date(timeIntervalSince1970: s)
            #expect(Self.expected(date).contains(Timestamp.format(date)), "\(s)")
        }
        for date in [Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0001), Date(timeIntervalSinceReferenceDate: 0.0001)] {
            #expect(Self.expected(date).contains(Timestamp.format(date)), "\(date.timeIntervalSinceReferenceDate)")
        }
    }

    @Test func appendingWritesTheSameBytesAfterWhatIsThere() {
        var bytes = Array("x".utf8)
        let date = Date(timeIntervalSince1970: 1_798_979_101.211)
        Timestamp.append(date, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x" + Timestamp.format(date))
    }
}

/// A time read from its RFC 3339 text and written again is the same text: a decision record's facts, read by
/// `policy replay` and written again, must not move. Found by the `request` fuzz target's round trip
/// (`subscriptionExpiry` `8314-11-22T11:59:59.999Z` came back `.998Z`): the nearest `Double` to a millisecond can be
/// just below it, and Foundation floors the fraction.
@Suite struct TimestampRoundTripTests {
    @Test func theFuzzersFindingReadsBackAsWritten() {
        for text in ["8314-11-22T11:59:59.999Z", "2026-11-28T10:36:11.240Z", "1900-01-01T00:00:00.001Z", "9999-12-31T23:59:59.999Z"] {
            #expect(Timestamp.parse(text).map(Timestamp.format) == text)
        }
    }

    @Test func everyMillisecondReadsBackAsWritten() {
        var random = SeededRandom(seed: 42)
        let low: Int64 = -2_208_988_800_000, high: Int64 = 253_402_300_799_999
        for _ in 0..<20_000 {
            let ms = low + Int64(random.next() % UInt64(high - low))
            guard ms % 1000 != 0 else { continue }
            let date = Date(timeIntervalSince1970: Double(ms) / 1000)
            let text = Timestamp.format(date)
            #expect(Timestamp.parse(text).map(Timestamp.format) == text, "\(ms)")
        }
    }
}
