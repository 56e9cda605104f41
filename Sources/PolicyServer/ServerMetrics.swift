import CoreMetrics
import Foundation
import Metrics
import PolicyModel
import Prometheus

/// The server's metrics, through swift-metrics into its own Prometheus registry (no global bootstrap,
/// so every server in a test process counts apart).
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let decisions: [Reason: CoreMetrics.Counter]
    private let decideLatency: [String: CoreMetrics.Timer]
    private let reloads: [ReloadKind: CoreMetrics.Counter]
    private let throttles: CoreMetrics.Counter
    private let lockouts: CoreMetrics.Counter
    private let readTimeouts: CoreMetrics.Counter
    private let requestDeadlines: CoreMetrics.Counter

    public enum ReloadKind: String, Sendable, CaseIterable {
        case installed, refused
    }

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1),
        ]
        self.registry = registry
        self.factory = factory
        decisions = Dictionary(
            uniqueKeysWithValues: Reason.allCases.map {
                ($0, CoreMetrics.Counter(label: "gatehouse_decisions_total", dimensions: [("reason", $0.rawValue)], factory: factory))
            })
        decideLatency = Dictionary(
            uniqueKeysWithValues: ["decide", "batch", "explain", "check"].map {
                ($0, CoreMetrics.Timer(label: "gatehouse_decision_request_seconds", dimensions: [("route", $0)], factory: factory))
            })
        reloads = Dictionary(
            uniqueKeysWithValues: ReloadKind.allCases.map {
                ($0, CoreMetrics.Counter(label: "gatehouse_policy_reloads_total", dimensions: [("outcome", $0.rawValue)], factory: factory))
            })
        throttles = CoreMetrics.Counter(label: "gatehouse_throttled_total", factory: factory)
        lockouts = CoreMetrics.Counter(label: "gatehouse_lockouts_total", factory: factory)
        readTimeouts = CoreMetrics.Counter(label: "gatehouse_read_timeouts_total", factory: factory)
        requestDeadlines = CoreMetrics.Counter(label: "gatehouse_request_deadlines_total", factory: factory)
    }

    public func decided(_ decision: Decision) { decisions[decision.reason]?.increment() }

    public func decisionRoute(_ route: String, took nanoseconds: UInt64) {
        decideLatency[route]?.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// The latency timer of a decision route (`decide`, `batch`, `explain`, `check`), for a route to hold rather
    /// than look up by name on every request.
    public func decisionLatency(_ route: String) -> CoreMetrics.Timer {
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
        CoreMetrics.Counter(label: "gatehouse_signins_total", dimensions: [("method", method), ("outcome", outcome)], factory: factory).increment()
        if outcome == "locked" { lockouts.increment() }
    }

    /// The Prometheus text exposition; `security` is the identity layer's event counters since start
    /// (PIN failures, refusals, alarms, Apple token rejections), exported as gauges of those totals.
    public func exposition(security: [String: Int] = [:]) -> [UInt8] {
        for (name, value) in security {
            CoreMetrics.Gauge(label: "gatehouse_security_events", dimensions: [("event", name)], factory: factory).record(value)
        }
        return registry.emitToBuffer()
    }
}
