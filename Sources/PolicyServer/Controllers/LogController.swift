import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import NIOCore
import PolicyModel

/// The operator's reads of the logs: `GET /v1/operator/decisions` (decision records with their inputs) and
/// `GET /v1/operator/audit` (security events), newest first, filtered, a page at a time behind an opaque cursor; JSON
/// pages, or with `Accept: application/x-ndjson` one record per line (the form `policy replay` reads). Each needs the
/// operator credential.
struct LogController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    /// `?from&to&user&action&resourceType&decision&reason&cursor&limit`.
    @Sendable func decisions(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try LogQueryParameters(request.uri.queryParameters, allowed: ["from", "to", "user", "action", "resourceType", "decision", "reason"])
        // What is queued is written first, so a read right after a decision finds it.
        await server.service.flushDecisionRecords()
        let page = try await identity.decisionRecords(query.filter, cursor: query.cursor, limit: query.limit, operator: credential)
        return answer(page.rows.map(Self.record), next: page.next, key: "decisions", request)
    }

    /// `?from&to&user&kind&outcome&reason&cursor&limit`.
    @Sendable func audit(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try LogQueryParameters(request.uri.queryParameters, allowed: ["from", "to", "user", "kind", "outcome", "reason"])
        let page = try await identity.auditEvents(query.filter, cursor: query.cursor, limit: query.limit, operator: credential)
        return answer(page.rows.map(Self.event), next: page.next, key: "events", request)
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

    init(_ parameters: Hummingbird.Parameters, allowed: Set<String>) throws(RequestError) {
        let known = allowed.union(["cursor", "limit"])
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
