import Foundation
import PolicyModel

/// A value while a condition is evaluated. Timestamps are seconds since 1970; durations are seconds.
package enum ConditionValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case timestamp(Double)
    case duration(Double)
    case list(ConditionList)
    /// `resource.members`: user id to resource role.
    case map([String: String])
}

/// A list value, kept in the form it was found in so reading it does not copy it.
package enum ConditionList: Sendable, Hashable {
    /// `subject.roles`.
    case strings([String])
    /// A list attribute, already checked against its element type; elements convert on access.
    case values([Value], ConditionType)
    /// A list literal.
    case items([ConditionValue])

    package var count: Int {
        switch self {
        case .strings(let s): s.count
        case .values(let v, _): v.count
        case .items(let i): i.count
        }
    }

    /// The element at `index`, or nil when out of range.
    package func element(at index: Int) -> ConditionValue? {
        guard index >= 0, index < count else { return nil }
        switch self {
        case .strings(let s): return .string(s[index])
        case .values(let v, let type): return type.convert(v[index])
        case .items(let i): return i[index]
        }
    }
}

/// The declared type of an attribute, as the engine needs it to convert the request's JSON value.
package indirect enum ConditionType: Sendable, Hashable {
    case bool, int, double, string, timestamp, duration
    case enumeration([String])
    case list(ConditionType)

    /// The JSON value as this type, or nil when it does not fit (null never fits).
    ///
    /// An integral double is an int, an int is a double, a timestamp is an RFC 3339 string, a duration is
    /// a duration string ("1h30m") or a number of seconds, an enumeration must be one of its values.
    package func convert(_ value: Value) -> ConditionValue? {
        switch (self, value) {
        case (.bool, .bool(let b)): return .bool(b)
        case (.int, .int(let i)): return .int(i)
        case (.int, .double(let d)):
            guard d.rounded() == d, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else { return nil }
            return .int(Int(d))
        case (.double, .double(let d)): return .double(d)
        case (.double, .int(let i)): return .double(Double(i))
        case (.string, .string(let s)): return .string(s)
        case (.enumeration(let values), .string(let s)): return values.contains { SmallName.equal($0, s) } ? .string(s) : nil
        case (.timestamp, .string(let s)): return Timestamp.parse(s).map { .timestamp($0.timeIntervalSince1970) }
        case (.duration, .string(let s)): return DurationText.seconds(s).map { .duration($0) }
        case (.duration, .int(let i)): return .duration(Double(i))
        case (.duration, .double(let d)): return d.isFinite ? .duration(d) : nil
        case (.list(let element), .list(let items)):
            for item in items where element.convert(item) == nil { return nil }
            return .list(.values(items, element))
        default: return nil
        }
    }
}

/// Duration text as in CEL: a sequence of number-and-unit parts such as "1h30m", "250ms", "1.5h", "-5m".
package enum DurationText {
    /// The duration in seconds, or nil if the text is not a duration.
    package static func seconds(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else { return nil }
        var i = 0
        var sign = 1.0
        if bytes[0] == UInt8(ascii: "-") {
            sign = -1
            i = 1
        }
        var total = 0.0
        var parts = 0
        while i < bytes.count {
            let start = i
            while i < bytes.count, (bytes[i] >= 0x30 && bytes[i] <= 0x39) || bytes[i] == UInt8(ascii: ".") { i += 1 }
            guard i > start, let number = Double(String(decoding: bytes[start..<i], as: UTF8.self)) else { return nil }
            let unit: Double
            if i + 1 < bytes.count, bytes[i] == UInt8(ascii: "m"), bytes[i + 1] == UInt8(ascii: "s") {
                unit = 0.001
                i += 2
            } else if i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "h"): unit = 3600
                case UInt8(ascii: "m"): unit = 60
                case UInt8(ascii: "s"): unit = 1
                default: return nil
                }
                i += 1
            } else {
                return nil
            }
            total += number * unit
            parts += 1
        }
        guard parts > 0, total.isFinite else { return nil }
        return sign * total
    }
}
