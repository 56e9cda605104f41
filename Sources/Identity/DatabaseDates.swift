import Foundation
import GRDB
import PolicyModel

/// The text SQLite stores a `Date` as, `yyyy-MM-dd HH:mm:ss.SSS` in UTC: exactly what GRDB's `Date.databaseValue`
/// writes, without its `DateFormatter` (ICU), which cost the decision-log writer about 15,000 instructions a record
/// (docs/performance.md, "Recording decisions"). Dates whose year is outside 1900...9999 go through GRDB's own
/// formatter, so the stored text never differs from what GRDB would write (ICU turns Julian before 1582).
enum DatabaseDate {
    /// The seconds between 2001-01-01 (Foundation's reference date) and 1970-01-01.
    private static let referenceSince1970 = 978_307_200.0
    /// 1900-01-01 and 10000-01-01, in milliseconds since 1970.
    private static let fastRange: ClosedRange<Double> = -2_208_988_800_000 ... 253_402_300_799_999

    /// `date` as GRDB stores it in SQLite.
    static func value(_ date: Date) -> DatabaseValue {
        text(date).databaseValue
    }

    /// `date` as `yyyy-MM-dd HH:mm:ss.SSS` in UTC, rounded to the nearest millisecond (a half up) as Foundation's
    /// formatter does: the date's time since 1970 in milliseconds, plus a half, rounded down.
    static func text(_ date: Date) -> String {
        let milliseconds = ((date.timeIntervalSinceReferenceDate + referenceSince1970) * 1000 + 0.5).rounded(.down)
        guard fastRange.contains(milliseconds) else {
            return String.fromDatabaseValue(date.databaseValue) ?? ""
        }
        let ms = Int64(milliseconds)
        let (days, msOfDay) = ms.quotientAndRemainder(dividingBy: 86_400_000)
        let day = msOfDay < 0 ? days - 1 : days
        let inDay = msOfDay < 0 ? msOfDay + 86_400_000 : msOfDay
        let (year, month, dayOfMonth) = Timestamp.civil(fromDays: day)
        let seconds = inDay / 1000
        var bytes = [UInt8](repeating: 0, count: 23)
        func put(_ value: Int64, _ at: Int, _ width: Int) {
            var v = value
            for i in stride(from: at + width - 1, through: at, by: -1) {
                bytes[i] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
            }
        }
        put(year, 0, 4)
        bytes[4] = 45  // -
        put(month, 5, 2)
        bytes[7] = 45
        put(dayOfMonth, 8, 2)
        bytes[10] = 32  // space
        put(seconds / 3600, 11, 2)
        bytes[13] = 58  // :
        put(seconds / 60 % 60, 14, 2)
        bytes[16] = 58
        put(seconds % 60, 17, 2)
        bytes[19] = 46  // .
        put(inDay % 1000, 20, 3)
        return String(decoding: bytes, as: UTF8.self)
    }
}
