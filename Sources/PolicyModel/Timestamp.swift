import Foundation

/// Timestamps in requests and policies: RFC 3339, `2026-11-22T12:00:00Z`, with an optional fraction of 1 to 9
/// digits and a `Z` or `±HH:MM` offset.
public enum Timestamp {
    /// The instant an RFC 3339 timestamp names, or nil when `text` is not one.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// Parses RFC 3339 (section 5.6, `date-time`) by hand: upper-case `T` and `Z`, a real calendar date (no
    /// February 30) from 1583 on (before the Gregorian calendar, Foundation's calendar is Julian, so readers
    /// would disagree), hours 00-23, no leap second (`:60`), offsets up to ±23:59. Every text accepted is one
    /// Foundation's `ISO8601FormatStyle` accepts too, and reads as the same `Date` (tested).
    public static func parse(utf8 p: UnsafeBufferPointer<UInt8>) -> Date? {
        // Twenty bytes can only be the common form (a fraction needs two more, an offset six).
        if p.count == 20 { return parseCommon(p.baseAddress!) }
        return parseGeneral(utf8: p)
    }

    /// `parse` for exactly the 20 bytes at `p` in the common form `YYYY-MM-DDTHH:MM:SSZ` (UTC, no fraction), nil
    /// for anything else: the same answer as `parseGeneral` for every 20-byte text (`TimestampCommonFormTests`),
    /// read as three words instead of byte by byte (the request reader's timestamps, issue 41: ~330 instructions to
    /// ~90).
    @inline(__always)
    package static func parseCommon(_ p: UnsafePointer<UInt8>) -> Date? {
        #if _endian(little)
        let raw = UnsafeRawPointer(p)
        // Bytes 0-7 `YYYY-MM-`, 8-15 `DDTHH:MM`, 12-19 `H:MM:SSZ` (12-15 checked twice).
        let w0 = raw.loadUnaligned(as: UInt64.self)
        let w1 = raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        let w2 = raw.loadUnaligned(fromByteOffset: 12, as: UInt64.self)
        let digits0: UInt64 = 0x00FF_FF00_FFFF_FFFF
        let digits1: UInt64 = 0xFFFF_00FF_FF00_FFFF
        let digits2: UInt64 = 0x00FF_FF00_0000_0000
        let separators0: UInt64 = 0x2D00_002D_0000_0000  // '-' at 4 and 7
        let separators1: UInt64 = 0x0000_3A00_0054_0000  // 'T' at 10, ':' at 13
        let separators2: UInt64 = 0x5A00_003A_0000_0000  // ':' at 16, 'Z' at 19
        guard w0 & ~digits0 == separators0, w1 & ~digits1 == separators1, w2 & ~(digits2 | 0x0000_0000_FFFF_FFFF) == separators2
        else { return nil }
        // Each digit byte is 0x30-0x39: adding 0x46 leaves its high bit clear only below 0x3A, subtracting 0x30 only
        // from 0x30 up (a borrow or carry can only follow a byte already marked).
        @inline(__always) func allDigits(_ w: UInt64, _ mask: UInt64) -> Bool {
            let x = w & mask
            let highs = mask & 0x8080_8080_8080_8080
            return ((x &+ (mask & 0x4646_4646_4646_4646)) | (x &- (mask & 0x3030_3030_3030_3030))) & highs == 0
        }
        guard allDigits(w0, digits0), allDigits(w1, digits1), allDigits(w2, digits2) else { return nil }
        let d0 = w0 &- (digits0 & 0x3030_3030_3030_3030)
        let d1 = w1 &- (digits1 & 0x3030_3030_3030_3030)
        let d2 = w2 &- (digits2 & 0x3030_3030_3030_3030)
        @inline(__always) func byte(_ w: UInt64, _ i: UInt64) -> Int { Int(truncatingIfNeeded: (w &>> (i &* 8)) & 0xFF) }
        let year = byte(d0, 0) * 1000 + byte(d0, 1) * 100 + byte(d0, 2) * 10 + byte(d0, 3)
        let month = byte(d0, 5) * 10 + byte(d0, 6)
        let day = byte(d1, 0) * 10 + byte(d1, 1)
        let hour = byte(d1, 3) * 10 + byte(d1, 4)
        let minute = byte(d1, 6) * 10 + byte(d1, 7)
        let second = byte(d2, 5) * 10 + byte(d2, 6)
        guard year >= 1583, month >= 1, month <= 12, day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 59
        else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSinceReferenceDate: Double(seconds - 978_307_200))
        #else
        return parseGeneral(utf8: UnsafeBufferPointer(start: p, count: 20))
        #endif
    }

    /// `parse` written byte by byte, for every form (`parseCommon` must agree with it on 20 bytes).
    package static func parseGeneral(utf8 p: UnsafeBufferPointer<UInt8>) -> Date? {
        let n = p.count
        guard n >= 20, n <= 40 else { return nil }
        @inline(__always) func digits(_ at: Int, _ count: Int) -> Int? {
            var value = 0
            for i in at..<(at + count) {
                let d = Int(p[i]) &- 0x30
                guard d >= 0, d <= 9 else { return nil }
                value = value * 10 + d
            }
            return value
        }
        guard let year = digits(0, 4), p[4] == 0x2D, let month = digits(5, 2), p[7] == 0x2D, let day = digits(8, 2),
            p[10] == UInt8(ascii: "T"), let hour = digits(11, 2), p[13] == 0x3A, let minute = digits(14, 2), p[16] == 0x3A,
            let second = digits(17, 2)
        else { return nil }
        guard year >= 1583, month >= 1, month <= 12, day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 59
        else { return nil }
        var at = 19
        var fraction = 0.0
        if p[at] == UInt8(ascii: ".") {
            at += 1
            var value: UInt64 = 0
            var count = 0
            while at < n, p[at] >= 0x30, p[at] <= 0x39 {
                guard count < 9 else { return nil }
                value = value * 10 + UInt64(p[at] - 0x30)
                count += 1
                at += 1
            }
            guard count > 0 else { return nil }
            // Both operands are exact, so the quotient is the correctly rounded decimal fraction.
            fraction = Double(value) / powersOfTen[count]
        }
        guard at < n else { return nil }
        var offset = 0
        if p[at] == UInt8(ascii: "Z") {
            at += 1
        } else if p[at] == UInt8(ascii: "+") || p[at] == UInt8(ascii: "-") {
            guard n - at == 6, let h = digits(at + 1, 2), p[at + 3] == 0x3A, let m = digits(at + 4, 2), h <= 23, m <= 59 else { return nil }
            offset = (h * 60 + m) * 60
            if p[at] == UInt8(ascii: "-") { offset = -offset }
            at += 6
        } else {
            return nil
        }
        guard at == n else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSinceReferenceDate: Double(seconds - 978_307_200) + fraction)
    }

    private static let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    @inline(__always)
    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    @inline(__always)
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The RFC 3339 form of `date` in UTC, with a fraction only when it has one.
    ///
    /// The text of Foundation's `ISO8601FormatStyle` (with fractional seconds when `date` has a fraction), written by
    /// hand for the years 1900 to 9999: the formatter cost a decision record about 5% of its server's CPU, twice per
    /// record. Foundation floors the fraction to the millisecond from the date's time since 2001, so this does too, but
    /// a time less than one ulp below a millisecond is written as that millisecond, so that a time read by `parse` and
    /// written again is the same text (`TimestampFormatTests`, `TimestampRoundTripTests`). Other years go through
    /// Foundation.
    public static func format(_ date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `format(date)`'s UTF-8 bytes to `out`.
    public static func append(_ date: Date, to out: inout [UInt8]) {
        let since1970 = date.timeIntervalSince1970
        let whole = since1970.rounded(.down)
        let fractional = whole != since1970
        guard whole >= -2_208_988_800, whole < 253_402_300_800 else {
            let text = fractional ? date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)) : date.formatted(Date.ISO8601FormatStyle())
            out.append(contentsOf: text.utf8)
            return
        }
        var milliseconds = Int64(whole) * 1000
        if fractional {
            // The fraction from the time since 2001, floored to the millisecond as Foundation does, after adding one
            // ulp: the nearest Double to a millisecond (what `parse` reads from its text) can be just below it (an ulp
            // is 0.1 µs today, 30 µs in year 9999), and flooring that wrote the millisecond before, so a time read and
            // written again moved. Only a time less than an ulp below a millisecond differs from Foundation's text.
            let sinceReference = date.timeIntervalSinceReferenceDate
            let referenceWhole = sinceReference.rounded(.down)
            let fraction = sinceReference - referenceWhole + sinceReference.ulp
            milliseconds = (Int64(referenceWhole) + 978_307_200) * 1000 + Int64((fraction * 1000).rounded(.down))
        }
        let (days, inDay) = floorDivision(milliseconds, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let seconds = inDay / 1000
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: fractional ? 24 : 20))
        out.withUnsafeMutableBufferPointer { b in
            func put(_ value: Int64, _ at: Int, _ width: Int) {
                var v = value
                for i in stride(from: start + at + width - 1, through: start + at, by: -1) {
                    b[i] = UInt8(truncatingIfNeeded: 48 + v % 10)
                    v /= 10
                }
            }
            put(year, 0, 4)
            b[start + 4] = UInt8(ascii: "-")
            put(month, 5, 2)
            b[start + 7] = UInt8(ascii: "-")
            put(day, 8, 2)
            b[start + 10] = UInt8(ascii: "T")
            put(seconds / 3600, 11, 2)
            b[start + 13] = UInt8(ascii: ":")
            put(seconds / 60 % 60, 14, 2)
            b[start + 16] = UInt8(ascii: ":")
            put(seconds % 60, 17, 2)
            if fractional {
                b[start + 19] = UInt8(ascii: ".")
                put(inDay % 1000, 20, 3)
                b[start + 23] = UInt8(ascii: "Z")
            } else {
                b[start + 19] = UInt8(ascii: "Z")
            }
        }
    }

    /// `value` divided by `divisor`, rounded down, and the remainder (never negative).
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (q, r) = value.quotientAndRemainder(dividingBy: divisor)
        return r < 0 ? (q - 1, r + divisor) : (q, r)
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`); Identity's
    /// `DatabaseDate` writes its dates with it too.
    package static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
