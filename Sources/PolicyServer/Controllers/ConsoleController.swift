import Foundation
import Gatehouse
import Hummingbird
import Identity
import NIOCore
import PolicyModel
import PolicyServerAPI

/// The operator routes the console calls (issue 43), each a thin call into the identity layer or the facade, each
/// needing the operator credential (401 without it), every write audited with the operator as the one who acted.
/// Scripts may call them as the console does: nothing the console shows or changes goes around them.
struct ConsoleController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }
    /// The query parameters of the console's reads (`onlyParameters` refuses any other; `GeneratedRoutes.queries`).
    static let findUsersQuery: Set<String> = ["q"]
    static let userQuery: Set<String> = ["audit"]
    static let policyQuery: Set<String> = []
    static let explainQuery: Set<String> = ["session"]

    /// `GET /v1/operator/users?q=`: users by id, username, pseudonym, Apple subject or original transaction id.
    @Sendable func findUsers(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try onlyParameters(request, Self.findUsersQuery)
        guard let q = query["q"] else { throw RequestError(field: "q", "is required") }
        let users = try await identity.findUsers(q, operator: credential)
        return json(.object([.init("users", .array(users.map(Self.user)))]))
    }

    /// `GET /v1/operator/users/{id}?audit=N`: the user's page.
    @Sendable func user(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try onlyParameters(request, Self.userQuery)
        var limit = 50
        if let text = query["audit"] {
            guard let n = Int(text) else { throw RequestError(field: "audit", "must be a whole number", kind: .wrongType) }
            limit = n
        }
        let page = try await identity.operatorUserPage(userId: try context.parameters.require("id"), auditLimit: limit, operator: credential)
        return json(Self.page(page, declaredRoles: server.service.policy.declaredAppRoles))
    }

    /// `POST /v1/operator/users/{id}/explain?session=`: a decision request explained for the user now. A subject in the
    /// body is ignored (the subject is the user's; the answer's `request` shows the one judged).
    @Sendable func explain(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try onlyParameters(request, Self.explainQuery)
        let body = try await readBytes(request, limit: server.settings.bodyLimit)
        let asked = try DecisionBodies.request(body, limit: server.settings.bodyLimit)
        let policy = server.service.policy
        let answer = try await server.service.explain(
            forUser: try context.parameters.require("id"), sessionId: query["session"], asked, operator: credential, by: policy)
        return json(Self.explanation(answer), policy: policy.contentHash)
    }

    /// `POST /v1/operator/users/{id}/decisions/{decisionId}/explain?session=`: a recorded decision of the user, explained
    /// again now.
    @Sendable func explainAgain(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let query = try onlyParameters(request, Self.explainQuery)
        guard let id = Int64(try context.parameters.require("decisionId")), id > 0 else {
            throw RequestError(field: "decisionId", "must be a decision record's id", kind: .wrongType)
        }
        let (answer, record) = try await server.service.explainAgain(
            decisionId: id, forUser: try context.parameters.require("id"), sessionId: query["session"], operator: credential)
        guard case .object(var fields) = Self.explanation(answer) else { return json(Self.explanation(answer)) }
        fields.append(
            .init(
                "recorded",
                .object([.init("id", .int(Int(record.id))), .init("effect", .string(record.effect)), .init("reason", .string(record.reason))])))
        return json(.object(fields), policy: server.service.policy.contentHash)
    }

    /// `DELETE /v1/operator/users/{id}/sessions/{sessionId}`: ends one session (a generated route, below).
    func endSession(userId: String, sessionId: String, _ request: Request, _ context: ServerContext) async throws {
        let credential = try server.requireOperator(request, context)
        try await identity.endSession(userId: userId, sessionId: sessionId, operator: credential)
    }

    /// `POST /v1/operator/users/{id}/signout-everywhere`: ends every session; answers how many.
    @Sendable func signOutEverywhere(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let count = try await identity.signOutEverywhere(userId: try context.parameters.require("id"), operator: credential)
        return json(.object([.init("ended", .int(count))]))
    }

    /// `DELETE /v1/operator/users/{id}/subscription`: ends the subscription an operator or a purchase recorded (a
    /// generated route, below).
    func endSubscription(userId: String, _ request: Request, _ context: ServerContext) async throws {
        let credential = try server.requireOperator(request, context)
        try await identity.endSubscription(userId: userId, operator: credential)
    }

    /// `GET /v1/operator/policy`: the active version, the last refused one, the bundle revision, decision counts from
    /// the decision log's newest records, and the shadow candidate's summary when there is one.
    @Sendable func policy(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        _ = try onlyParameters(request, Self.policyQuery)
        await server.service.flushDecisionRecords()
        guard case .object(var fields) = server.policyStatus() else { return json(server.policyStatus()) }
        let policy = server.service.policy
        fields.append(.init("declaredRoles", .array(policy.declaredAppRoles.map(JSONText.string))))
        fields.append(.init("products", .object(policy.productTiers.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) })))
        if let bundle = server.bundles?.current {
            fields.append(.init("bundle", .object([.init("revision", .int(Int(bundle.manifest.revision))), .init("etag", .string(bundle.etag))])))
        }
        fields.append(.init("decisionLog", .string(server.service.decisionLog.description)))
        let counts = try await identity.decisionCounts(operator: credential)
        var summary: [JSONText.Field] = [.init("records", .int(counts.records))]
        if let from = counts.from, let to = counts.to {
            summary += [.init("from", .string(Timestamp.format(from))), .init("to", .string(Timestamp.format(to)))]
        }
        summary.append(
            .init(
                "counts",
                .array(
                    counts.counts.sorted { ($1.value, $0.key.action, $0.key.reason) < ($0.value, $1.key.action, $1.key.reason) }.map { key, n in
                        .object([
                            .init("action", .string(key.action)), .init("effect", .string(key.effect)), .init("reason", .string(key.reason)),
                            .init("count", .int(n)),
                        ])
                    })))
        fields.append(.init("decisions", .object(summary)))
        if let shadow = server.service.shadow {
            await shadow.flush()
            let all = shadow.counts
            let disagreements = all.filter { $0.key.live != $0.key.shadow }
            fields.append(
                .init(
                    "shadow",
                    .object([
                        .init("directory", .string(shadow.directory)), .init("candidate", shadow.candidate.policy.map { .string($0.contentHash) } ?? .null),
                        .init("decisions", .int(all.values.reduce(0, +))), .init("disagreements", .int(disagreements.values.reduce(0, +))),
                    ])))
        }
        return json(.object(fields))
    }

    /// A JSON answer with the console's headers (`ConsolePages.protect`: no-store above all, as it holds a user's data).
    private func json(_ value: JSONText, policy: String? = nil) -> Response {
        var response = PolicyServer.json(value, policy: policy)
        ConsolePages.protect(&response.headers)
        return response
    }

    /// The query's parameters, refusing any not in `allowed` (naming it).
    private func onlyParameters(_ request: Request, _ allowed: Set<String>) throws(RequestError) -> [String: String] {
        var out: [String: String] = [:]
        for (key, value) in request.uri.queryParameters {
            let name = String(key)
            guard allowed.contains(name) else {
                let expected = allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", ")
                throw RequestError(field: name, "is not a parameter of this route (expected: \(expected))", kind: .unknownField)
            }
            out[name] = String(value)
        }
        return out
    }

    static func user(_ u: FoundUser) -> JSONText {
        var fields: [JSONText.Field] = [.init("id", .string(u.id)), .init("pseudonym", .string(u.pseudonym))]
        if let v = u.username { fields.append(.init("username", .string(v))) }
        if let v = u.displayName { fields.append(.init("displayName", .string(v))) }
        if let v = u.email { fields.append(.init("email", .string(v))) }
        fields += [
            .init("isPrivateRelayEmail", .bool(u.isPrivateRelayEmail)), .init("createdAt", .string(Timestamp.format(u.createdAt))),
            .init("matchedBy", .string(u.matchedBy)),
        ]
        return .object(fields)
    }

    static func date(_ d: Date?) -> JSONText { d.map { .string(Timestamp.format($0)) } ?? .null }

    static func page(_ p: OperatorUserPage, declaredRoles: [String]) -> JSONText {
        var tier: [JSONText.Field] = [.init("tier", p.tier.tier.map(JSONText.string) ?? .null), .init("source", .string(p.tier.source))]
        if let v = p.tier.productId { tier.append(.init("productId", .string(v))) }
        if let v = p.tier.expiresAt { tier.append(.init("expiresAt", .string(Timestamp.format(v)))) }
        if let v = p.tier.originalTransactionId { tier.append(.init("originalTransactionId", .string(v))) }
        if let v = p.tier.updatedAt { tier.append(.init("updatedAt", .string(Timestamp.format(v)))) }
        let privacy = p.privacy
        return .object([
            .init("user", user(p.user)),
            .init("tier", .object(tier)),
            .init(
                "transactions",
                .array(
                    p.transactions.map { t in
                        .object([
                            .init("originalTransactionId", .string(t.originalTransactionId)), .init("transactionId", .string(t.transactionId)),
                            .init("productId", .string(t.productId)), .init("environment", .string(t.environment)),
                            .init("expiresAt", date(t.expiresAt)), .init("revokedAt", date(t.revokedAt)), .init("signedAt", .string(Timestamp.format(t.signedAt))),
                        ])
                    })),
            .init("roles", .array(p.roles.map(JSONText.string))),
            .init("declaredRoles", .array(declaredRoles.map(JSONText.string))),
            .init(
                "spaces",
                .array(
                    p.spaces.map { s in
                        .object([
                            .init("id", .string(s.id)), .init("type", .string(s.type)), .init("name", .string(s.name)), .init("role", .string(s.role)),
                            .init("ownerId", .string(s.ownerId)), .init("joinedAt", .string(Timestamp.format(s.joinedAt))),
                            .init("members", .array(s.members.map { .object([.init("userId", .string($0.userId)), .init("role", .string($0.role))]) })),
                        ])
                    })),
            .init(
                "sessions",
                .array(
                    p.sessions.map { s in
                        var fields: [JSONText.Field] = [
                            .init("id", .string(s.id)), .init("method", .string(s.method)), .init("device", s.device.map(JSONText.string) ?? .null),
                            .init("live", .bool(s.live)),
                            .init("createdAt", .string(Timestamp.format(s.createdAt))), .init("lastSeenAt", .string(Timestamp.format(s.lastSeenAt))),
                            .init("verifiedAt", .string(Timestamp.format(s.verifiedAt))), .init("expiresAt", .string(Timestamp.format(s.expiresAt))),
                        ]
                        if let v = s.revokedAt { fields.append(.init("revokedAt", .string(Timestamp.format(v)))) }
                        if let v = s.revokedReason { fields.append(.init("revokedReason", .string(v))) }
                        return .object(fields)
                    })),
            .init(
                "credentials",
                .array(
                    p.credentials.map { c in
                        var fields: [JSONText.Field] = [.init("kind", .string(c.kind)), .init("since", .string(Timestamp.format(c.since)))]
                        if let v = c.detail { fields.append(.init("detail", .string(v))) }
                        if let v = c.appleSubject { fields.append(.init("appleSubject", .string(v))) }
                        if let v = c.deviceId { fields.append(.init("deviceId", .string(v))) }
                        return .object(fields)
                    })),
            .init(
                "privacy",
                .object([
                    .init("analytics", .bool(privacy.analytics)), .init("crashReporting", .bool(privacy.crashReporting)),
                    .init("aiSuggestions", .bool(privacy.aiSuggestions)), .init("dataSharing", .string(privacy.dataSharing.rawValue)),
                ])),
            .init(
                "audit",
                .array(
                    p.audit.map { e in
                        var fields: [JSONText.Field] = []
                        if let id = e.id { fields.append(.init("id", .int(Int(id)))) }
                        fields += [.init("at", .string(Timestamp.format(e.at))), .init("kind", .string(e.kind)), .init("outcome", .string(e.outcome))]
                        if let v = e.method { fields.append(.init("method", .string(v))) }
                        if let v = e.reason { fields.append(.init("reason", .string(v))) }
                        return .object(fields)
                    })),
        ])
    }

    static func explanation(_ e: GatehouseService.UserExplanation) -> JSONText {
        .object([
            .init("explanation", e.explanation.json), .init("request", e.request.json), .init("session", e.sessionId.map(JSONText.string) ?? .null),
        ])
    }
}

/// The console's generated routes (`GeneratedRoutes`): their 204s carry the console's headers, which
/// `GeneratedRouteTransport` adds for the routes in `GeneratedRoutes.console`.
extension GeneratedRoutes {
    func deleteOperatorUsersByIdSessionsBySessionId(_ input: Operations.DeleteOperatorUsersByIdSessionsBySessionId.Input) async throws
        -> Operations.DeleteOperatorUsersByIdSessionsBySessionId.Output
    {
        let route = try RouteRequest.now()
        try await ConsoleController(server: server).endSession(userId: input.path.id, sessionId: input.path.sessionId, route.request, route.context)
        return .noContent(.init())
    }

    func deleteOperatorUsersByIdSubscription(_ input: Operations.DeleteOperatorUsersByIdSubscription.Input) async throws
        -> Operations.DeleteOperatorUsersByIdSubscription.Output
    {
        let route = try RouteRequest.now()
        try await ConsoleController(server: server).endSubscription(userId: input.path.id, route.request, route.context)
        return .noContent(.init())
    }
}
