import Foundation
import Gatehouse
import Hummingbird
import PolicyModel

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
        let (body, id) = try await userChange(request, context, required: ["roles"])
        try await identity.setAppRoles(userId: id, roles: try body.strings("roles"), declared: server.service.policy.declaredAppRoles)
        return noContent()
    }

    @Sendable func userUsage(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await usage(request, context, identity.incrementUserUsage(userId:counter:by:))
    }

    @Sendable func resourceUsage(_ request: Request, _ context: ServerContext) async throws -> Response {
        try await usage(request, context, identity.incrementUsage(resourceId:counter:by:))
    }

    @Sendable func setSubscription(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (body, id) = try await userChange(request, context, required: ["productId"], optional: ["expiresAt"])
        let tiers = server.service.policy.productTiers
        try await identity.recordSubscription(
            userId: id, productId: try body.string("productId"), expiresAt: try body.optionalDate("expiresAt"), productTiers: tiers)
        return noContent()
    }

    @Sendable func importLegacyPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        let (body, id) = try await userChange(request, context, required: ["hexHash"])
        try await identity.importLegacyPINHash(userId: id, hexHash: try body.string("hexHash"))
        return noContent()
    }

    @Sendable func unlockPIN(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        try await identity.unlockPIN(userId: try context.parameters.require("id"), operator: credential)
        return noContent()
    }

    @Sendable func deleteUser(_ request: Request, _ context: ServerContext) async throws -> Response {
        let credential = try server.requireOperator(request, context)
        try await identity.deleteUser(userId: try context.parameters.require("id"), operator: credential)
        return noContent()
    }

    /// The operator credential checked, then the body and the `{id}` of the path.
    private func userChange(_ request: Request, _ context: ServerContext, required: Set<String>, optional: Set<String> = []) async throws
        -> (body: IdentityBody, id: String)
    {
        _ = try server.requireOperator(request, context)
        return (try await server.body(request, required: required, optional: optional), try context.parameters.require("id"))
    }

    /// `{"counter", "by"}` added to the counter of the `{id}` by `increment`; answers the counter's new value.
    private func usage(
        _ request: Request, _ context: ServerContext, _ increment: @escaping @Sendable (String, String, Int) async throws -> Int
    ) async throws -> Response {
        let (body, id) = try await userChange(request, context, required: ["counter"], optional: ["by"])
        let (counter, delta) = try usageChange(body)
        let value = try await increment(id, counter, delta)
        return json(.object([.init("counter", .string(counter)), .init("value", .int(value))]))
    }
}
