import Foundation
import Gatehouse
import PolicyModel
import Prometheus
import Synchronization

/// The server's metrics, in its own Prometheus registry (no global bootstrap, so every server in a test process
/// counts apart). Made through the registry rather than swift-metrics' factory so that every metric carries its
/// `# HELP` line; each name and help is stated once, in `Help`.
public final class ServerMetrics: DecisionObserver, Sendable {
    public let registry: PrometheusCollectorRegistry
    /// One counter per reason, at `reason.ordinal`: a `[Reason: Counter]` hashed the String-backed enum's raw value
    /// on every decision (about 350 instructions; every decision of a batch pays it).
    private let decisions: [Prometheus.Counter]
    private let decideLatency: [String: LatencyTimer]
    private let reloads: [ReloadKind: Prometheus.Counter]
    private let throttles: Prometheus.Counter
    private let lockouts: Prometheus.Counter
    private let readTimeouts: Prometheus.Counter
    private let maintenanceRuns: Prometheus.Counter
    private let maintenanceFailures: Prometheus.Counter
    private let purgedRows: Prometheus.Counter
    private let expiredLogRows: Prometheus.Counter
    private let refusedConnections: Prometheus.Counter
    private let requestDeadlines: Prometheus.Counter
    private let bundleStreamsOpen: Prometheus.Gauge
    private let bundleStreamsDropped: Prometheus.Counter
    private let cacheEvents: [DecisionCacheEvent: Prometheus.Counter]
    /// Decide requests answered ahead of the router (`DecideAhead`); not exported, tests read it.
    let answeredAhead = Atomic<Int>(0)
    /// The identity layer's event totals as last exported, so the counters move by the difference.
    private let exportedSecurity = Mutex<[String: Int]>([:])
    /// The decision recorder's totals as last exported, by metric name and label.
    private let exportedRecords = Mutex<[String: Int]>([:])

    /// Every metric's name and `# HELP` text.
    enum Help {
        static let decisions = ("gatehouse_decisions_total", "Decisions made, by reason.")
        static let latency = ("gatehouse_decision_request_seconds", "Time to answer a decision route (decide, batch, explain, check).")
        static let reloads = ("gatehouse_policy_reloads_total", "Policy reloads, by outcome: installed or refused (the last good version kept serving).")
        static let throttles = ("gatehouse_throttled_total", "Requests refused by a per-client rate limit (429).")
        static let lockouts = ("gatehouse_lockouts_total", "Sign-ins refused because the account is locked.")
        static let readTimeouts = ("gatehouse_read_timeouts_total", "Connections cut at the read deadline (408).")
        static let signIns = ("gatehouse_signins_total", "Sign-in and verification outcomes, by method and outcome (success or an error code).")
        static let maintenanceRuns = ("gatehouse_maintenance_runs_total", "Maintenance passes finished (expired rows purged, old logs expired).")
        static let maintenanceFailures = ("gatehouse_maintenance_failures_total", "Maintenance passes that failed because the store did not answer.")
        static let purgedRows = ("gatehouse_maintenance_purged_rows_total", "Expired rows (sessions, challenges, nonces, share codes) the maintenance task deleted.")
        static let expiredLogRows = ("gatehouse_maintenance_expired_log_rows_total", "Audit and decision log rows past the retention the maintenance task deleted.")
        static let refusedConnections = ("gatehouse_connections_refused_total", "Connections closed at once because --max-connections were open.")
        static let requestDeadlines = ("gatehouse_request_deadlines_total", "Requests answered 503 storage_unavailable at the request deadline (--request-timeout).")
        static let bundleStreamsOpen = ("gatehouse_bundle_streams_open", "GET /v1/bundle/events streams open now.")
        static let bundleStreamsDropped = (
            "gatehouse_bundle_streams_dropped_total", "Bundle event streams closed because their client stopped reading (its queue filled).")
        static let cache = (
            "gatehouse_decision_cache_total",
            "Decision cache lookups and drops, by event: hit, miss (read from the store), eviction (past the bound), invalidation (a write changed the fact).")
        static let notifications = (
            "gatehouse_fact_notifications_up",
            "1 while this replica hears other replicas' writes (PostgreSQL LISTEN), 0 while it does not (cached facts trusted for 1 s only); absent on SQLite.")
        static let recordsWritten = ("gatehouse_decision_log_written_total", "Decision records written to the store.")
        static let recordsDropped = (
            "gatehouse_decision_log_dropped_total",
            "Decision records not written, by reason: queue_full (the store behind or stalled), store_failed, quota, request_cap, closed. The decisions were answered as ever.")
        static let recordsCoalesced = (
            "gatehouse_decision_log_coalesced_total", "Signed-out decision records not written because an identical one of the same client was, within the minute.")
        static let shadow = (
            "gatehouse_shadow_decisions_total",
            "Decisions of the shadow candidate (--shadow) beside the live ones, by action and the live and shadow reasons (equal: they agree).")
        static let shadowDropped = ("gatehouse_shadow_dropped_total", "Decisions not given to the shadow candidate because its queue was full.")
        static let security = ("gatehouse_security_events_total", "Security events counted by the identity layer (PIN failures, refusals, alarms, Apple token rejections), by event.")
    }

    /// A duration histogram that takes nanoseconds, as a route measures them.
    public struct LatencyTimer: Sendable {
        let histogram: DurationHistogram
        /// Records one request's time.
        public func recordNanoseconds(_ nanoseconds: Int64) { histogram.record(.nanoseconds(nanoseconds)) }
    }

    public enum ReloadKind: String, Sendable, CaseIterable {
        case installed, refused
    }

    public init() {
        let registry = PrometheusCollectorRegistry()
        let buckets: [Duration] = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1),
        ]
        self.registry = registry
        var byReason = [Prometheus.Counter?](repeating: nil, count: Reason.allCases.count)
        for reason in Reason.allCases {
            byReason[reason.ordinal] = registry.makeCounter(name: Help.decisions.0, labels: [("reason", reason.rawValue)], help: Help.decisions.1)
        }
        decisions = byReason.map { counter in
            guard let counter else { preconditionFailure("Reason.ordinal gives two reasons one place") }
            return counter
        }
        decideLatency = Dictionary(
            uniqueKeysWithValues: ["decide", "batch", "explain", "check"].map {
                ($0, LatencyTimer(histogram: registry.makeDurationHistogram(name: Help.latency.0, labels: [("route", $0)], buckets: buckets, help: Help.latency.1)))
            })
        reloads = Dictionary(
            uniqueKeysWithValues: ReloadKind.allCases.map {
                ($0, registry.makeCounter(name: Help.reloads.0, labels: [("outcome", $0.rawValue)], help: Help.reloads.1))
            })
        throttles = registry.makeCounter(name: Help.throttles.0, help: Help.throttles.1)
        lockouts = registry.makeCounter(name: Help.lockouts.0, help: Help.lockouts.1)
        readTimeouts = registry.makeCounter(name: Help.readTimeouts.0, help: Help.readTimeouts.1)
        maintenanceRuns = registry.makeCounter(name: Help.maintenanceRuns.0, help: Help.maintenanceRuns.1)
        maintenanceFailures = registry.makeCounter(name: Help.maintenanceFailures.0, help: Help.maintenanceFailures.1)
        purgedRows = registry.makeCounter(name: Help.purgedRows.0, help: Help.purgedRows.1)
        expiredLogRows = registry.makeCounter(name: Help.expiredLogRows.0, help: Help.expiredLogRows.1)
        refusedConnections = registry.makeCounter(name: Help.refusedConnections.0, help: Help.refusedConnections.1)
        requestDeadlines = registry.makeCounter(name: Help.requestDeadlines.0, help: Help.requestDeadlines.1)
        bundleStreamsOpen = registry.makeGauge(name: Help.bundleStreamsOpen.0, help: Help.bundleStreamsOpen.1)
        bundleStreamsDropped = registry.makeCounter(name: Help.bundleStreamsDropped.0, help: Help.bundleStreamsDropped.1)
        cacheEvents = Dictionary(
            uniqueKeysWithValues: DecisionCacheEvent.allCases.map {
                ($0, registry.makeCounter(name: Help.cache.0, labels: [("event", $0.rawValue)], help: Help.cache.1))
            })
    }

    /// A maintenance pass that finished: how many expired rows it purged and how many log rows it expired.
    public func maintained(purged: Int, expiredLogRows expired: Int) {
        maintenanceRuns.increment()
        purgedRows.increment(by: Int64(purged))
        expiredLogRows.increment(by: Int64(expired))
    }

    /// A maintenance pass that failed (the store did not answer); the next one tries again.
    public func maintenanceFailed() { maintenanceFailures.increment() }

    /// A bundle event stream opened or closed (`open` now), and whether it was dropped for not reading.
    public func bundleStreams(open: Int, dropped: Bool) {
        bundleStreamsOpen.set(to: Double(open))
        if dropped { bundleStreamsDropped.increment() }
    }

    /// A connection closed at once because `--max-connections` were open.
    public func connectionRefused() { refusedConnections.increment() }

    /// A decision the facade's pipeline made (`DecisionObserver`): counted by reason.
    public func decided(_ decision: Decision) { decisions[decision.reason.ordinal].increment() }

    /// What the decision cache did (`DecisionObserver`): counted by event.
    public func cache(_ event: DecisionCacheEvent) { cacheEvents[event]?.increment() }

    public func decisionRoute(_ route: String, took nanoseconds: UInt64) {
        decideLatency[route]?.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// The latency timer of a decision route (`decide`, `batch`, `explain`, `check`), for a route to hold rather
    /// than look up by name on every request.
    public func decisionLatency(_ route: String) -> LatencyTimer {
        guard let timer = decideLatency[route] else { preconditionFailure("no latency metric for the route \(route)") }
        return timer
    }

    public func reloaded(_ kind: ReloadKind) { reloads[kind]?.increment() }

    public func throttled() { throttles.increment() }

    /// A connection cut at the read deadline (answered 408 unless an answer had started); no route saw it.
    public func readTimedOut() { readTimeouts.increment() }

    /// A request answered 503 at the request deadline (`--request-timeout`).
    public func requestDeadlineMissed() { requestDeadlines.increment() }

    /// One sign-in or verification outcome (`anonymous`/`refresh`/`pin`..., `success` or an error code).
    public func signIn(method: String, outcome: String) {
        registry.makeCounter(name: Help.signIns.0, labels: [("method", method), ("outcome", outcome)], help: Help.signIns.1).increment()
        if outcome == "locked" { lockouts.increment() }
    }

    /// The Prometheus text exposition; `security` is the identity layer's event totals since start (PIN failures,
    /// refusals, alarms, Apple token rejections), exported as counters moved by what they grew since the last call.
    public func exposition(
        security: [String: Int] = [:], notificationsUp: Bool? = nil, decisionLog: DecisionRecorder.Counts? = nil, shadow: ShadowEvaluator? = nil
    ) -> [UInt8] {
        if let shadow {
            let counts = shadow.counts
            let dropped = shadow.dropped
            exportedRecords.withLock { exported in
                for (pair, value) in counts.sorted(by: { ($0.key.action, $0.key.live.rawValue, $0.key.shadow.rawValue) < ($1.key.action, $1.key.live.rawValue, $1.key.shadow.rawValue) }) {
                    let key = "shadow.\(pair.action).\(pair.live.rawValue).\(pair.shadow.rawValue)"
                    let counter = registry.makeCounter(
                        name: Help.shadow.0, labels: [("action", pair.action), ("live", pair.live.rawValue), ("shadow", pair.shadow.rawValue)], help: Help.shadow.1)
                    let grown = value - (exported[key] ?? 0)
                    if grown > 0 { counter.increment(by: Int64(grown)) }
                    exported[key] = max(value, exported[key] ?? 0)
                }
                let counter = registry.makeCounter(name: Help.shadowDropped.0, help: Help.shadowDropped.1)
                let grown = dropped - (exported["shadow.dropped"] ?? 0)
                if grown > 0 { counter.increment(by: Int64(grown)) }
                exported["shadow.dropped"] = max(dropped, exported["shadow.dropped"] ?? 0)
            }
        }
        if let counts = decisionLog {
            exportedRecords.withLock { exported in
                func move(_ counter: Prometheus.Counter, _ key: String, to value: Int) {
                    let grown = value - (exported[key] ?? 0)
                    if grown > 0 { counter.increment(by: Int64(grown)) }
                    exported[key] = max(value, exported[key] ?? 0)
                }
                move(registry.makeCounter(name: Help.recordsWritten.0, help: Help.recordsWritten.1), "written", to: counts.written)
                for (reason, value) in counts.droppedByReason.sorted(by: { $0.key < $1.key }) {
                    move(
                        registry.makeCounter(name: Help.recordsDropped.0, labels: [("reason", reason)], help: Help.recordsDropped.1), "dropped." + reason,
                        to: value)
                }
                move(registry.makeCounter(name: Help.recordsCoalesced.0, help: Help.recordsCoalesced.1), "coalesced", to: counts.coalesced)
            }
        }
        if let notificationsUp {
            registry.makeGauge(name: Help.notifications.0, help: Help.notifications.1).set(to: notificationsUp ? 1.0 : 0.0)
        }
        exportedSecurity.withLock { exported in
            for (name, value) in security.sorted(by: { $0.key < $1.key }) {
                let counter = registry.makeCounter(name: Help.security.0, labels: [("event", name)], help: Help.security.1)
                let grown = value - (exported[name] ?? 0)
                if grown > 0 { counter.increment(by: Int64(grown)) }
                exported[name] = max(value, exported[name] ?? 0)
            }
        }
        return registry.emitToBuffer()
    }
}
