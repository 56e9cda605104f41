import Foundation
import NIOCore
import PolicyModel
import PostgresNIO

/// Rows for `COPY ... FROM STDIN` in PostgreSQL's text format: a value a column, tab-separated, one row a line, `\N`
/// for NULL, and a backslash, tab, newline or carriage return in a value written as its backslash escape. PostgreSQL
/// reads each value with the column type's input function, as it reads a literal.
struct PostgresCopyRows {
    private(set) var buffer: ByteBuffer

    init(capacity: Int) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// A text value, or NULL; `first` for a row's first column (no tab before it).
    mutating func text(_ value: String?, first: Bool = false) {
        if !first { buffer.writeInteger(UInt8(ascii: "\t")) }
        guard var value else {
            buffer.writeStaticString("\\N")
            return
        }
        value.withUTF8 { bytes in
            var start = 0
            for (i, byte) in bytes.enumerated() {
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
                case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
                case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
                default: continue
                }
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<i]))
                buffer.writeInteger(UInt8(ascii: "\\"))
                buffer.writeInteger(escape)
                start = i + 1
            }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start...]))
        }
    }

    /// A `timestamptz` as postgres-nio's binary `Date` stores it (whole microseconds since 2000-01-01, truncated toward
    /// zero), written `YYYY-MM-DD HH:MM:SS.ffffff+00`: a year past 9999 with its every digit, one before 1 as the year
    /// before Christ it is (astronomical year 0 is 1 BC) with ` BC` after the zone, as PostgreSQL reads and writes them.
    mutating func timestamp(_ date: Date, first: Bool = false) {
        if !first { buffer.writeInteger(UInt8(ascii: "\t")) }
        let micros = Int64(date.timeIntervalSince(Self.epoch) * 1_000_000)
        let (days, dayMicros) = Self.floorDivide(micros, 86_400_000_000)
        let (year, month, day) = Timestamp.civil(fromDays: days + 10_957)
        let seconds = dayMicros / 1_000_000
        digits(year >= 1 ? year : 1 - year, width: 4)
        buffer.writeInteger(UInt8(ascii: "-"))
        digits(month, width: 2)
        buffer.writeInteger(UInt8(ascii: "-"))
        digits(day, width: 2)
        buffer.writeInteger(UInt8(ascii: " "))
        digits(seconds / 3600, width: 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        digits(seconds / 60 % 60, width: 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        digits(seconds % 60, width: 2)
        buffer.writeInteger(UInt8(ascii: "."))
        digits(dayMicros % 1_000_000, width: 6)
        buffer.writeStaticString(year >= 1 ? "+00" : "+00 BC")
    }

    /// `value` (not negative) in decimal, zero-padded to at least `width` digits.
    private mutating func digits(_ value: Int64, width: Int) {
        var count = 1
        var rest = value / 10
        while rest > 0 { count += 1; rest /= 10 }
        let start = buffer.writerIndex
        buffer.writeRepeatingByte(UInt8(ascii: "0"), count: max(width, count))
        var at = buffer.writerIndex - 1
        var value = value
        while at >= start, value > 0 {
            buffer.setInteger(UInt8(ascii: "0") + UInt8(value % 10), at: at)
            value /= 10
            at -= 1
        }
    }

    mutating func endRow() { buffer.writeInteger(UInt8(ascii: "\n")) }

    private static let epoch = Date(timeIntervalSince1970: 946_684_800)

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (q, r) = value.quotientAndRemainder(dividingBy: divisor)
        return r < 0 ? (q - 1, r + divisor) : (q, r)
    }
}
