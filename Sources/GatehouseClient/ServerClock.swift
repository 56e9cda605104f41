package import Foundation
internal import Synchronization

/// The server's time as the device can know it: the device's clock corrected by the offset the last answer's `Date`
/// header showed (RFC 9110 §6.6.1).
///
/// An access token's expiry (`accessExpiresAt`) is the server's time. Judged by a device clock that is wrong (set by
/// hand, a dead battery, a test moving it) the client would refresh before every call when the clock runs ahead of
/// the token's lifetime, rotating the refresh token each time, or send expired tokens when it runs behind and pay a
/// 401 and a retry for each. Before the first answer (a session restored at launch) the device clock is used as it is.
///
/// The header has whole seconds and was written somewhere between the request leaving and the answer arriving, so it
/// bounds the server's time rather than giving it: the server's clock read at most `date + 1` when the request left.
/// The estimate takes that bound, so it runs ahead of the server's clock by less than a second plus the round trip and
/// never behind it: a token is refreshed a little early rather than sent after the server let it expire (taking the
/// header as the time of arrival, as before, ran behind by up to a second plus the round trip).
package final class ServerClock: Sendable {
    private let device: @Sendable () -> Date
    private let offset = Mutex<TimeInterval>(0)

    /// A server clock read through `device`.
    package init(device: @escaping @Sendable () -> Date) { self.device = device }

    /// The server's time now, as far as the device knows.
    package func now() -> Date { device().addingTimeInterval(offset.withLock { $0 }) }

    /// The device's clock, uncorrected.
    package func deviceNow() -> Date { device() }

    /// Learns the offset from an answer's `Date` header to a request sent at `sentAt` (the device's clock): the
    /// latest the server's clock can have read then, `date + 1`. A header that does not parse changes nothing.
    package func observe(dateHeader: String, sentAt: Date) {
        guard let server = Self.parseHTTPDate(dateHeader) else { return }
        offset.withLock { $0 = server.addingTimeInterval(1).timeIntervalSince(sentAt) }
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form a server may send; nil for anything else.
    package static func parseHTTPDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].count == 4, parts[0].last == ",", parts[5] == "GMT",
            parts[1].count == 2, let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
            parts[3].count == 4, let year = Int(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard time.count == 3, time.allSatisfy({ $0.count == 2 }), let hour = Int(time[0]), let minute = Int(time[1]),
            let second = Int(time[2]), (0..<24).contains(hour), (0..<60).contains(minute), (0...60).contains(second)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let components = DateComponents(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second)
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }
}
