import Foundation
import Synchronization

/// So many requests per window for one client.
public struct RateLimit: Sendable, Hashable {
    public var requests: Int
    public var window: TimeInterval
    public init(requests: Int, window: TimeInterval) {
        self.requests = requests
        self.window = window
    }
}

/// A token bucket per client key (the peer address): a burst of `requests`, refilled evenly over `window`.
///
/// Memory is bounded: past `maxClients` keys, buckets that have refilled completely are dropped, and
/// if that is not enough the table starts again (a flood of addresses cannot grow it without end).
public final class RateLimiter: Sendable {
    public let limit: RateLimit
    private let maxClients: Int
    private let now: @Sendable () -> Date
    private let buckets = Mutex<[String: Bucket]>([:])

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    public init(limit: RateLimit, maxClients: Int = 100_000, now: @escaping @Sendable () -> Date = { Date() }) {
        self.limit = limit
        self.maxClients = maxClients
        self.now = now
    }

    /// Takes one request from `client`'s bucket: nil when allowed, else the seconds until one is.
    public func take(_ client: String) -> TimeInterval? {
        let t = now()
        let rate = Double(limit.requests) / limit.window
        let capacity = Double(limit.requests)
        return buckets.withLock { table -> TimeInterval? in
            // One lookup: the bucket is refilled and taken from where it is stored.
            let wait = Self.take(&table[client, default: Bucket(tokens: capacity, updated: t)], at: t, rate: rate, capacity: capacity)
            if wait == nil, table.count > maxClients { Self.prune(&table, at: t, rate: rate, capacity: capacity, max: maxClients) }
            return wait
        }
    }

    /// Seconds until `client` may make a request, without taking one: nil when it may now.
    public func wait(_ client: String) -> TimeInterval? {
        let t = now()
        let rate = Double(limit.requests) / limit.window
        let capacity = Double(limit.requests)
        return buckets.withLock { table -> TimeInterval? in
            guard let bucket = table[client] else { return nil }
            let tokens = min(capacity, bucket.tokens + max(0, t.timeIntervalSince(bucket.updated)) * rate)
            return tokens >= 1 ? nil : ((1 - tokens) / rate).rounded(.up)
        }
    }

    /// Refills `bucket` for the time since it was last touched and takes one token: nil, or the seconds until one is
    /// there.
    private static func take(_ bucket: inout Bucket, at t: Date, rate: Double, capacity: Double) -> TimeInterval? {
        bucket.tokens = min(capacity, bucket.tokens + max(0, t.timeIntervalSince(bucket.updated)) * rate)
        bucket.updated = t
        guard bucket.tokens >= 1 else { return ((1 - bucket.tokens) / rate).rounded(.up) }
        bucket.tokens -= 1
        return nil
    }

    private static func prune(_ table: inout [String: Bucket], at t: Date, rate: Double, capacity: Double, max: Int) {
        table = table.filter { $0.value.tokens + t.timeIntervalSince($0.value.updated) * rate < capacity }
        if table.count > max { table.removeAll(keepingCapacity: true) }
    }
}
