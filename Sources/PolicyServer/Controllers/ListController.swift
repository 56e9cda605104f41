import Foundation
import Gatehouse
import Hummingbird
import PolicyEngine
import PolicyModel
import PolicyServerAPI

/// The inverse questions: `POST /v1/plan` (which resources of a type may this subject take this action on, as a
/// condition) and `GET /v1/resources` (the ids in Gatehouse's own store the bearer may act on, a page at a time). The
/// facade answers both (`GatehouseService.plan`, `GatehouseService.resources`); this parses and shapes.
struct ListController {
    let server: GatehouseServer
    var service: GatehouseService { server.service }

    /// `{"subject"?, "action", "resourceType", "context"?}` with a bearer or a subject, as the decision routes take
    /// them; answers the plan's JSON (docs/decision-contract.md, "Plans").
    @Sendable func plan(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let bearer = try bearerToken(request)
        let text = try await readBody(request, limit: server.settings.bodyLimit)
        let asked = try PlanBody(text)
        let policy = service.policy
        let report = BearerReport.forRequest(bearer)
        let plan = try await service.plan(
            bearer: bearer, subject: asked.subject, action: asked.action, resourceType: asked.resourceType, context: asked.context, by: policy,
            report: report)
        return json(plan.json, policy: policy.contentHash).refusingBearer(report)
    }

    /// `?type=T&action=A[&cursor=C&limit=N]` with a bearer: `{"ids": [...], "nextCursor": "..."}` (no `nextCursor` on
    /// the last page).
    @Sendable func resources(_ request: Hummingbird.Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let query = try ListQuery(request.uri.queryParameters)
        let page = try await service.resources(token: bearer, type: query.type, action: query.action, cursor: query.cursor, limit: query.limit)
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: Self.pageJSON(ids: page.ids, nextCursor: page.nextCursor))))
    }

    /// A page's answer, `{"ids":[...]}` with `nextCursor` after the ids when there is one, written straight to bytes
    /// with the decision writer's string escaping: the same bytes as the `JSONText` tree it replaces
    /// (`ListPageJSONTests`), without a tree node and a `String` per id.
    static func pageJSON(ids: [String], nextCursor: String?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ids.reduce(32 + (nextCursor?.utf8.count ?? 0)) { $0 + $1.utf8.count + 3 })
        DecisionWriter.append(literal: #"{"ids":["#, to: &out)
        for (i, id) in ids.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            DecisionWriter.appendString(id, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let nextCursor {
            DecisionWriter.append(literal: #","nextCursor":"#, to: &out)
            DecisionWriter.appendString(nextCursor, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// The body of `POST /v1/plan`, read with the request reader's own subject and context rules.
struct PlanBody {
    var subject: Subject
    var action: String
    var resourceType: String
    var context: Context

    init(_ text: String) throws(RequestError) {
        guard case .map(let object) = try Value.parseJSON(text) else { throw RequestError(field: "", "the body must be a JSON object") }
        let known: Set<String> = ["subject", "action", "resourceType", "context"]
        for key in object.keys.sorted() where !known.contains(key) {
            throw RequestError(field: key, "is not a known field (expected: \(known.sorted().joined(separator: ", ")))")
        }
        guard case .string(let type)? = object["resourceType"] else {
            throw RequestError(field: "resourceType", object["resourceType"] == nil ? "is required" : "must be a string")
        }
        // The subject, action and context as a decision request reads them (a resource of the type stands in).
        var request = object
        request["resource"] = .map(["type": .string(type)])
        request["resourceType"] = nil
        let read = try PolicyModel.Request(value: .map(request))
        subject = read.subject
        action = read.action
        resourceType = type
        context = read.context
    }
}

/// The query of `GET /v1/resources`: `type` and `action` required, `cursor` and `limit` optional, each at most once.
struct ListQuery {
    /// The parameters `GET /v1/resources` takes (`GeneratedRoutes.queries`); any other is refused by name.
    static let parameters: Set<String> = ["type", "action", "cursor", "limit"]
    var type: String
    var action: String
    var cursor: String?
    var limit: Int

    init(_ parameters: Parameters) throws(RequestError) {
        for (key, _) in parameters where !Self.parameters.contains(String(key)) {
            throw RequestError(field: String(key), "is not a known parameter (expected: action, cursor, limit, type)")
        }
        func one(_ name: String) throws(RequestError) -> String? {
            let values = parameters.getAll(name)
            guard values.count <= 1 else { throw RequestError(field: name, "must be given once") }
            return values.first.map { String($0) }
        }
        guard let type = try one("type"), !type.isEmpty else { throw RequestError(field: "type", "is required") }
        guard let action = try one("action"), !action.isEmpty else { throw RequestError(field: "action", "is required") }
        self.type = type
        self.action = action
        cursor = try one("cursor")
        if let text = try one("limit") {
            guard let n = Int(text), (1...IdentityService.maximumListLimit).contains(n) else {
                throw RequestError(field: "limit", "must be an integer from 1 to \(IdentityService.maximumListLimit)")
            }
            limit = n
        } else {
            limit = GatehouseService.defaultListLimit
        }
    }
}
