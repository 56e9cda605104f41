import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import Identity
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry traces of `policy serve` (issue 39), configured by the standard `OTEL_*` variables and off unless
/// an OTLP endpoint is given: `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). Spans go out
/// over OTLP/HTTP with protobuf bodies (swift-otel's exporter; its gRPC exporter is not built). The sampler is
/// `parentbased_traceidratio` at 1.0 unless `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG` say otherwise; a caller's
/// W3C `traceparent`/`tracestate` is continued. docs/server.md lists the variables and the spans.
///
/// Off, nothing is bootstrapped: no middleware, no store wrapper, and the facade opens no span (`DecisionTracing`).
public enum ServerTracing {
    /// What `start` made: the exporter's service (it runs in the server's service group, first, so it stops last and
    /// sends what the last requests left) and the logging metadata provider that adds `trace_id`/`span_id`.
    public struct Running: Sendable {
        public let service: any Service
        public let metadataProvider: Logger.MetadataProvider
    }

    /// The metadata keys of a log line's trace (OpenTelemetry's log data model names).
    static let loggingKeys = OTel.Configuration.LoggingMetadataProviderConfiguration.default
    /// The trace of the running task, as the logs show it; a reader only (empty outside a span).
    static let metadata = OTel.makeLoggingMetadataProvider()

    /// Whether `environment` turns tracing on: an OTLP endpoint is given, the SDK is not disabled
    /// (`OTEL_SDK_DISABLED=true`) and the traces exporter is not `none`.
    public static func isConfigured(_ environment: [String: String]) -> Bool {
        let endpoint = [environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], environment["OTEL_EXPORTER_OTLP_ENDPOINT"]]
            .contains { ($0 ?? "").trimmingCharacters(in: .whitespaces).isEmpty == false }
        let disabled = environment["OTEL_SDK_DISABLED"]?.lowercased() == "true"
        let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased()
        return endpoint && !disabled && exporter != "none"
    }

    /// A start-up failure, naming the variable at fault when swift-otel does.
    public struct ConfigurationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Turns tracing on when `environment` configures it: bootstraps `InstrumentationSystem` with swift-otel's tracer
    /// (once per process) and the facade's spans. Nil when tracing stays off.
    public static func start(environment: [String: String]) throws(ConfigurationError) -> Running? {
        guard isConfigured(environment) else { return nil }
        if let proto = environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] ?? environment["OTEL_EXPORTER_OTLP_PROTOCOL"], proto != "http/protobuf" {
            throw ConfigurationError(
                description: "OTEL_EXPORTER_OTLP_PROTOCOL '\(proto)' is not supported: this build exports OTLP over HTTP with protobuf only (http/protobuf)")
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "gatehouse"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.traces.sampler = .parentBasedTraceIDRatio
        do {
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(tracer)
            DecisionTracing.enable()
            return Running(service: service, metadataProvider: metadata)
        } catch {
            throw ConfigurationError(description: "tracing: \(error)")
        }
    }

    /// The W3C trace id (32 hex digits) of the request being answered, when tracing is on; nil outside a span.
    static func currentTraceId() -> String? {
        guard DecisionTracing.isEnabled, let value = metadata.get()[loggingKeys.traceIDKey] else { return nil }
        return "\(value)"
    }
}

/// The request's span (kind server), continuing a caller's `traceparent`: OpenTelemetry's HTTP attributes
/// (`http.request.method`, `http.route`, `http.response.status_code`, `url.scheme`, `user_agent.original`), named
/// `METHOD /route`. Hummingbird's `TracingMiddleware` is not used as is: it records `url.path` and `url.query`
/// verbatim, and the operator routes carry a user id in their path (`/v1/operator/users/{id}/roles`); here
/// `url.path` is the route's template whenever the route has a parameter, and the query is never recorded.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    func handle(_ request: Hummingbird.Request, context: ServerContext, next: (Hummingbird.Request, ServerContext) async throws -> Response)
        async throws -> Response
    {
        var parent = InstrumentationContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let method = request.method.rawValue
        return try await withSpan("\(method)", context: parent, ofKind: .server) { span in
            span.updateAttributes { attributes in
                attributes["http.request.method"] = method
                attributes["url.scheme"] = "http"
                if let agent = request.headers[.userAgent] { attributes["user_agent.original"] = agent }
            }
            do {
                // An unsampled request: no child spans (the facade and the store check `DecisionTracing.recording`).
                let response = span.isRecording ? try await next(request, context) : try await DecisionTracing.$recording.withValue(false) { try await next(request, context) }
                name(span, request, context, status: Int(response.status.code))
                return response
            } catch {
                let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500
                name(span, request, context, status: status)
                throw error
            }
        }
    }

    private func name(_ span: any Span, _ request: Hummingbird.Request, _ context: ServerContext, status: Int) {
        let route = context.endpointPath
        if let route { span.operationName = "\(request.method.rawValue) \(route)" }
        span.updateAttributes { attributes in
            if let route { attributes["http.route"] = route }
            // The path itself only when it is the route (no parameter in it) or no route matched.
            attributes["url.path"] = route.map { $0.contains("{") ? $0 : request.uri.path } ?? "(no route)"
            attributes["http.response.status_code"] = status
        }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads `traceparent`/`tracestate` (and whatever the configured propagator asks for) from a request's headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return carrier[name]
    }
}

/// The identity store with a span per transaction and per statement (issue 39): `db.system` (`sqlite` or
/// `postgresql`), the operation and the table (`db.operation.name`, `db.collection.name`) and the statement's name in
/// the store's API (`gatehouse.store.statement`); never a bound value, a key or a row. Only made when tracing is on.
struct TracedStore: IdentityStore, FactChangeRelay {
    let base: any IdentityStore
    let system: String

    init(_ base: any IdentityStore, system: String) {
        self.base = base
        self.system = system
    }

    private func transaction<T>(_ kind: String, _ body: () async throws -> T) async throws -> T {
        guard DecisionTracing.recording else { return try await body() }
        return try await withSpan("gatehouse.store.\(kind)", ofKind: .client) { span in
            span.attributes["db.system"] = system
            span.attributes["gatehouse.store.transaction"] = kind
            return try await body()
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let system = self.system
        return try await transaction("read") { try await base.read { tx in try await body(TracedTransaction(base: tx, system: system)) } }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let system = self.system
        return try await transaction("write") { try await base.write { tx in try await body(TracedTransaction(base: tx, system: system)) } }
    }

    func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let system = self.system
        return try await transaction("read_one") { try await base.readOne { tx in try await body(TracedTransaction(base: tx, system: system)) } }
    }

    func flushErasures() async throws {
        try await TracedTransaction.statement(system, "flushErasures", operation: "VACUUM", table: nil) { try await base.flushErasures() }
    }

    func flushErasuresReportingSkipped() async throws -> [String] {
        try await TracedTransaction.statement(system, "flushErasures", operation: "VACUUM", table: nil) { try await base.flushErasuresReportingSkipped() }
    }

    func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow {
        try await TracedTransaction.statement(system, "countInWindow", operation: "UPSERT", table: GuessLimitRow.table) {
            try await base.countInWindow(scope, window: window, at: t)
        }
    }

    func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        try await TracedTransaction.statement(system, "decisionRows", operation: "SELECT", table: SessionRow.table) {
            try await base.decisionRows(accessTokenHash: accessTokenHash, resourceId: resourceId)
        }
    }

    func relay(into changes: FactChanges) {
        (base as? any FactChangeRelay)?.relay(into: changes)
    }
}

/// One transaction of `TracedStore`: each statement in a span of its own.
struct TracedTransaction: IdentityTransaction, BatchInserting {
    let base: any IdentityTransaction
    let system: String

    static func statement<T>(_ system: String, _ name: String, operation: String, table: String?, _ body: () async throws -> T) async throws -> T {
        guard DecisionTracing.recording else { return try await body() }
        return try await withSpan(table.map { "\(operation) \($0)" } ?? operation, ofKind: .client) { span in
            span.updateAttributes { attributes in
                attributes["db.system"] = system
                attributes["db.operation.name"] = operation
                if let table { attributes["db.collection.name"] = table }
                attributes["gatehouse.store.statement"] = name
            }
            return try await body()
        }
    }

    private func statement<T>(_ name: String, _ operation: String, _ table: String?, _ body: () async throws -> T) async throws -> T {
        try await Self.statement(system, name, operation: operation, table: table, body)
    }

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try await statement("fetchOne", "SELECT", R.table) { try await base.fetchOne(type, conditions) }
    }
    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try await statement("fetchSelected", "SELECT", R.table) { try await base.fetchSelected(type, conditions) }
    }
    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] {
        try await statement("fetchAll", "SELECT", R.table) { try await base.fetchAll(type, conditions) }
    }
    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] {
        try await statement("fetch", "SELECT", R.table) { try await base.fetch(read) }
    }
    func insert<R: StoredRow>(_ row: R) async throws {
        try await statement("insert", "INSERT", R.table) { try await base.insert(row) }
    }
    func insertBatch<R: StoredRow>(_ rows: [R]) async throws {
        try await statement("insertBatch", "INSERT", R.table) { try await base.insertAll(rows) }
    }
    func update<R: StoredRow>(_ row: R) async throws {
        try await statement("update", "UPDATE", R.table) { try await base.update(row) }
    }
    func upsert<R: StoredRow>(_ row: R) async throws {
        try await statement("upsert", "UPSERT", R.table) { try await base.upsert(row) }
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int {
        try await statement("deleteAll", "DELETE", R.table) { try await base.deleteAll(type, conditions) }
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int {
        try await statement("deleteBefore", "DELETE", R.table) { try await base.deleteAll(type, column, before: date) }
    }
    var placeholders: SQLPlaceholders { base.placeholders }
    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] {
        // The list query's text is the identity layer's own SQL, but only its name goes into the span.
        try await statement("fetchIds", "SELECT", nil) { try await base.fetchIds(sql, bindings) }
    }
    func append(_ event: AuditEventRow) async throws {
        try await statement("append", "INSERT", AuditEventRow.table) { try await base.append(event) }
    }
    func erase(actor pseudonym: String) async throws -> Int {
        try await statement("erase", "UPDATE", nil) { try await base.erase(actor: pseudonym) }
    }
    func afterCommit(_ action: @escaping @Sendable () -> Void) { base.afterCommit(action) }
    func announce(_ changes: Set<FactChange>) async throws {
        try await statement("announce", "NOTIFY", nil) { try await base.announce(changes) }
    }
}
