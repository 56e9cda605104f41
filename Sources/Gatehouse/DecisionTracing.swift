import PolicyEngine
import PolicyModel
import Synchronization
import Tracing

/// Whether the facade opens spans (issue 39): off until the server turns tracing on at start-up (`policy serve` with
/// `OTEL_EXPORTER_OTLP_ENDPOINT` set). Off, the pipeline never calls the tracing API: one relaxed load per place a
/// span would open, so tracing off costs nothing measurable on decide.
///
/// Spans carry only what explains a decision: the policy version, the action, the resource type, the effect and
/// reason, whether the session came from the cache. Never a subject or user id, a resource id, a token or its hash.
public enum DecisionTracing {
    private static let on = Atomic<Bool>(false)

    /// Whether spans are opened.
    @inline(__always) public static var isEnabled: Bool { on.load(ordering: .relaxed) }

    /// Whether the request being answered is recorded (its span is sampled): the request middleware sets it false for
    /// an unsampled request, so the pipeline and the store open no child span for it (a ratio sampler's unsampled
    /// requests then pay for one span, not a tree of non-recording ones).
    @TaskLocal package static var recording = true

    /// Whether to open a span here: tracing on and the request recorded.
    @inline(__always) package static var isActive: Bool { isEnabled && recording }

    /// Opens spans from now on (through `InstrumentationSystem`'s tracer, which the caller bootstraps first).
    public static func enable() { on.store(true, ordering: .relaxed) }

    /// The span names, one place for the docs and the tests.
    public enum Name {
        /// A bearer token resolved to its session (the cache or the store) and the resource's stored facts.
        public static let bearer = "gatehouse.bearer.resolve"
        /// One decision by the policy.
        public static let decide = "gatehouse.decide"
        /// A decision offered to the decision log (queued; written later in a batch).
        public static let record = "gatehouse.decision_log.offer"
        /// A batch of decision records written to the store (its own trace: it serves many requests).
        public static let recordWrite = "gatehouse.decision_log.write"
    }

    /// The decision's attributes: policy version hash, action, resource type, effect, reason.
    static func describe(_ span: any Span, _ decision: Decision, of request: Request, by policy: CompiledPolicy) {
        span.attributes["gatehouse.policy.hash"] = policy.contentHash
        span.attributes["gatehouse.action"] = request.action
        span.attributes["gatehouse.resource.type"] = request.resource.type
        span.attributes["gatehouse.decision"] = decision.isAllowed ? "allow" : "deny"
        span.attributes["gatehouse.reason"] = decision.reason.rawValue
    }
}
