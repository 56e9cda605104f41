import Foundation
import GRDB
import GatehouseTestSupport
import Testing

@testable import Identity

/// The decision-log writer formats dates itself (`DatabaseDate`), so the text it stores must be exactly what GRDB's
/// `Date.databaseValue` stores: reads, retention (`at < ?`) and the operator's time filters compare that text.
@Suite struct DatabaseDateTests {
    static func grdb(_ date: Date) -> String? { String.fromDatabaseValue(date.databaseValue) }

    @Test func theTextIsGRDBsForDatesAcrossTheRange() {
        var random = SeededRandom(seed: 20_261_128)
        // 1900-01-01 ... 9999-12-31 in seconds since 1970, and a fraction of a second below the millisecond.
        let low = -2_208_988_800.0, high = 253_402_300_799.0
        for _ in 0..<20_000 {
            let whole = low + Double(random.next() % UInt64(high - low))
            let fraction = Double(random.next() % 1_000_000_000) / 1_000_000_000
            let date = Date(timeIntervalSince1970: whole + fraction)
            #expect(DatabaseDate.text(date) == Self.grdb(date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func theTextIsGRDBsAtTheEdges() {
        let seconds: [Double] = [
            0, -0.0005, -0.001, 0.0009999, 0.001, 86_399.9995, 951_782_400, 951_868_799.999,  // 2000-02-29
            4_107_542_400, 1_795_000_060.123456, 1_795_000_060.9999999, -2_208_988_800, -2_208_988_800.0001,
            -2_208_988_800.5, 253_402_300_799.999, 253_402_300_800, 253_402_300_800.5, -62_135_596_800, 1e12, -1e11,
        ]
        for s in seconds {
            let date = Date(timeIntervalSince1970: s)
            #expect(DatabaseDate.text(date) == Self.grdb(date), "\(s)")
        }
        for date in [Date.distantPast, Date.distantFuture, Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0001)] {
            #expect(DatabaseDate.text(date) == Self.grdb(date), "\(date.timeIntervalSinceReferenceDate)")
        }
    }
}
