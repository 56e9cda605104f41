import Foundation
import Gatehouse
import Identity
import Hummingbird
import PolicyModel
import PolicyServerAPI

/// The operator's routes: Apple credential state, app roles, subscriptions, legacy PIN import, usage counters,
/// PIN unlock, user deletion. Each needs the operator credential (`GatehouseServer.requireOperator`).
struct OperatorController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    @Sendable func appleCredentialState(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        let body = try await server.body(request, required: ["appleUserId", "state"], optional: ["transferredTo"])
        guard let state = AppleCredentialState(rawValue: try body.string("state")) else {
            throw RequestError(field: "state", "must be one of \(AppleCredentialState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        try await identity.updateAppleCredentialState(
            appleUserId: try body.string("appleUserId"), state: state, transferredTo: try body.optionalString("transferredTo"), operator: credential)
        return noContent()
    }

    @Sendable func setRoles(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        return try await userChange(request, context, required: ["roles"]) { body, id in
            try await identity.setAppRoles(
                userId: id, roles: try body.strings("roles"), declared: server.service.policy.declaredAppRoles, operator: credential)
        }
    }

    @Sendable func userUsage(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await usage(request, context, identity.incrementUserUsage(userId:counter:by:))
    }

    @Sendable func resourceUsage(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await usage(request, context, identity.incrementUsage(resourceId:counter:by:))
    }

    @Sendable func setSubscription(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        return try await userChange(request, context, required: ["productId"], optional: ["expiresAt"]) { body, id in
            let tiers = server.service.policy.productTiers
            try await identity.recordSubscription(
                userId: id, productId: try body.string("productId"), expiresAt: try body.optionalDate("expiresAt"), productTiers: tiers,
                operator: credential)
        }
    }

    @Sendable func importLegacyPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await userChange(request, context, required: ["hexHash"]) { body, id in
            try await identity.importLegacyPINHash(userId: id, hexHash: try body.string("hexHash"))
        }
    }

    /// `POST /v1/operator/users/{id}/pin-unlock`, a generated route (below).
    func unlockPIN(userId: String, _ request: Request, _ context: ServerContext) async throws {
        let credential = try server.requireOperator(request, context)
        try await identity.unlockPIN(userId: userId, operator: credential)
    }

    /// `DELETE /v1/operator/users/{id}`, a generated route (below).
    func deleteUser(userId: String, _ request: Request, _ context: ServerContext) async throws {
        let credential = try server.requireOperator(request, context)
        // Queued decision records are written first, so the erasure clears the user's too.
        await server.service.flushDecisionRecords()
        try await identity.deleteUser(userId: userId, operator: credential)
    }

    /// The operator credential checked, then the body and the `{id}` of the path.
    private func userInput(_ request: Request, _ context: ServerContext, required: Set<String>, optional: Set<String> = []) async throws
        -> (body: IdentityBody, id: String)
    {
        _ = try server.requireOperator(request, context)
        return (try await server.body(request, required: required, optional: optional), try context.parameters.require("id"))
    }

    /// A change to the user `{id}` from a body (`userInput`); answers 204 once `change` is done.
    private func userChange(
        _ request: Request, _ context: ServerContext, required: Set<String>, optional: Set<String> = [],
        _ change: (IdentityBody, String) async throws -> Void
    ) async throws -> Response {
        let (body, id) = try await userInput(request, context, required: required, optional: optional)
        try await change(body, id)
        return noContent()
    }

    /// `{"counter", "by"}` added to the counter of the `{id}` by `increment`; answers the counter's new value.
    private func usage(
        _ request: Request, _ context: ServerContext, _ increment: @escaping @Sendable (String, String, Int) async throws -> Int
    ) async throws -> Response {
        let (body, id) = try await userInput(request, context, required: ["counter"], optional: ["by"])
        let (counter, delta) = try usageChange(body)
        let value = try await increment(id, counter, delta)
        return json(.object([.init("counter", .string(counter)), .init("value", .int(value))]))
    }
}

/// The operator's generated routes (`GeneratedRoutes`): the PIN unlock's and the deletion's 204s are the spec's; the
/// writes with a body answer with the controller's method as it was registered by hand (`sent`).
extension GeneratedRoutes {
    func postOperatorUsersByIdPinUnlock(_ input: Operations.PostOperatorUsersByIdPinUnlock.Input) async throws
        -> Operations.PostOperatorUsersByIdPinUnlock.Output
    {
        let route = try RouteRequest.now()
        try await OperatorController(server: server).unlockPIN(userId: input.path.id, route.request, route.context)
        return .noContent(.init())
    }

    func deleteOperatorUsersById(_ input: Operations.DeleteOperatorUsersById.Input) async throws -> Operations.DeleteOperatorUsersById.Output {
        let route = try RouteRequest.now()
        try await OperatorController(server: server).deleteUser(userId: input.path.id, route.request, route.context)
        return .noContent(.init())
    }
}
