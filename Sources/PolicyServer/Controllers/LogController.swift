import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import NIOCore
import PolicyModel
import PolicyServerAPI

/// The operator's reads of the logs: `GET /v1/operator/decisions` (decision records with their inputs) and
/// `GET /v1/operator/audit` (security events), newest first, filtered, a page at a time behind an opaque cursor; JSON
/// pages, or with `Accept: application/x-ndjson` one record per line (the form `policy replay` reads). Each needs the
/// operator credential.
struct LogController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }
    /// The filters of each read (with `cursor` and `limit`, `LogQueryParameters.paging`, its query: `GeneratedRoutes.queries`).
    static let decisionFilters: Set<String> = ["from", "to", "user", "action", "resourceType", "decision", "reason"]
    static let auditFilters: Set<String> = ["from", "to", "user", "kind", "outcome", "reason"]

    /// `?from&to&user&action&resourceType&decision&reason&cursor&limit`.
    @Sendable func decisions(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try LogQueryParameters(request.uri.queryParameters, allowed: Self.decisionFilters)
        // What is queued is written first, so a read right after a decision finds it.
        await server.service.flushDecisionRecords()
        let page = try await identity.decisionRecords(query.filter, cursor: query.cursor, limit: query.limit, operator: credential)
        return answer(page.rows.map(Self.record), next: page.next, key: "decisions", request)
    }

    /// `?from&to&user&kind&outcome&reason&cursor&limit`.
    @Sendable func audit(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try LogQueryParameters(request.uri.queryParameters, allowed: Self.auditFilters)
        let page = try await identity.auditEvents(query.filter, cursor: query.cursor, limit: query.limit, operator: credential)
        return answer(page.rows.map(Self.event), next: page.next, key: "events", request)
    }

    /// The shadow candidate's summary: its hash (or why it does not compile), how many decisions it saw and how many it
    /// would answer otherwise, the disagreements by action and reasons, and the newest examples (user ids pseudonymised).
    /// 404 `not_found` without `--shadow`.
    @Sendable func shadow(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        _ = try server.requireOperator(request, context)
        guard let shadow = server.service.shadow else { throw Problem(.identity(.notFound), detail: "this server has no shadow policy set (--shadow DIR)") }
        await shadow.flush()
        let candidate = shadow.candidate
        let counts = shadow.counts
        let total = counts.values.reduce(0, +)
        let disagreements = counts.filter { $0.key.live != $0.key.shadow }
        let names = try await identity.decisionPseudonyms()
        var fields: [JSONText.Field] = [
            .init("directory", .string(shadow.directory)),
            .init("candidate", candidate.policy.map { .string($0.contentHash) } ?? .null),
            .init("live", .string(server.service.policy.contentHash)),
        ]
        if !candidate.refused.isEmpty { fields.append(.init("refused", .array(candidate.refused.map(JSONText.string)))) }
        fields += [
            .init("decisions", .int(total)), .init("disagreements", .int(disagreements.values.reduce(0, +))), .init("dropped", .int(shadow.dropped)),
            .init(
                "byAction",
                .array(
                    disagreements.sorted { ($1.value, $0.key.action) < ($0.value, $1.key.action) }.map { pair, count in
                        .object([
                            .init("action", .string(pair.action)), .init("live", .string(pair.live.rawValue)), .init("shadow", .string(pair.shadow.rawValue)),
                            .init("count", .int(count)),
                        ])
                    })),
            .init(
                "samples",
                .array(
                    shadow.samples.reversed().map { s in
                        .object([
                            .init("live", .string(s.live.rawValue)), .init("shadow", .string(s.shadow.rawValue)), .init("request", names.pseudonymised(s.request).json),
                        ])
                    })),
        ]
        return json(.object(fields))
    }

    /// A JSON page `{key: [...], "nextCursor"?}`, or NDJSON (the cursor of the next page in `Gatehouse-Next-Cursor`).
    private func answer(_ items: [JSONText], next: String?, key: String, _ request: Hummingbird.Request) -> Response {
        if request.headers[.accept]?.contains("application/x-ndjson") == true {
            var headers: HTTPFields = [.contentType: "application/x-ndjson"]
            if let next { headers[.gatehouseNextCursor] = next }
            let text = items.map { $0.rendered() + "\n" }.joined()
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        var fields: [JSONText.Field] = [.init(key, .array(items))]
        if let next { fields.append(.init("nextCursor", .string(next))) }
        return json(.object(fields))
    }

    /// A decision record as `policy replay` reads it: the row's columns and the request as decided.
    static func record(_ row: DecisionLogRow) -> JSONText {
        var fields: [JSONText.Field] = []
        if let id = row.id { fields.append(.init("id", .int(Int(id)))) }
        fields.append(.init("at", .string(Timestamp.format(row.at))))
        if let subject = row.subject { fields.append(.init("subject", .string(subject))) }
        fields += [.init("action", .string(row.action)), .init("resourceType", .string(row.resourceType))]
        if let id = row.resourceId { fields.append(.init("resourceId", .string(id))) }
        fields += [.init("effect", .string(row.effect)), .init("reason", .string(row.reason)), .init("policyHash", .string(row.policyHash))]
        if let location = row.policyLocation { fields.append(.init("policy", .string(location))) }
        if let facts = row.facts, let request = try? PolicyModel.Request(json: facts) { fields.append(.init("request", request.json)) }
        return .object(fields)
    }

    /// A security event: kind, outcome, reason, method and the actor's pseudonym; never a secret (the row holds none).
    static func event(_ row: AuditEventRow) -> JSONText {
        var fields: [JSONText.Field] = []
        if let id = row.id { fields.append(.init("id", .int(Int(id)))) }
        fields += [.init("at", .string(Timestamp.format(row.at))), .init("kind", .string(row.kind)), .init("outcome", .string(row.outcome))]
        if let method = row.method { fields.append(.init("method", .string(method))) }
        if let reason = row.reason { fields.append(.init("reason", .string(reason))) }
        if let actor = row.actor { fields.append(.init("actor", .string(actor))) }
        if let attempt = row.attempt { fields.append(.init("attempt", .string(attempt))) }
        return .object(fields)
    }
}

extension HTTPField.Name {
    /// The cursor of the next page of an NDJSON log read; absent on the last page.
    static let gatehouseNextCursor = HTTPField.Name("Gatehouse-Next-Cursor")!
}

/// The query of a log read: filters, `cursor` and `limit` (default 100, at most 1,000); an unknown parameter or a
/// malformed time is refused naming it.
struct LogQueryParameters {
    var filter = LogFilter()
    var cursor: String?
    var limit = 100
    /// The parameters of every log read beside its filters.
    static let paging: Set<String> = ["cursor", "limit"]

    init(_ parameters: Hummingbird.Parameters, allowed: Set<String>) throws(RequestError) {
        let known = allowed.union(Self.paging)
        for (key, value) in parameters {
            let name = String(key)
            guard known.contains(name) else {
                throw RequestError(field: name, "is not a filter of this route (expected: \(known.sorted().joined(separator: ", ")))", kind: .unknownField)
            }
            let text = String(value)
            switch name {
            case "from", "to":
                guard let date = Timestamp.parse(text) else { throw RequestError(field: name, "must be an RFC 3339 timestamp", kind: .invalidTimestamp) }
                if name == "from" { filter.from = date } else { filter.to = date }
            case "user": filter.userId = text
            case "action": filter.action = text
            case "resourceType": filter.resourceType = text
            case "decision": filter.decision = text
            case "reason": filter.reason = text
            case "kind": filter.kind = text
            case "outcome": filter.outcome = text
            case "cursor": cursor = text
            case "limit":
                guard let n = Int(text) else { throw RequestError(field: "limit", "must be a whole number", kind: .wrongType) }
                limit = n
            default: break
            }
        }
    }
}
