import Gatehouse
import Hummingbird

/// Shared spaces: creating one (of a type the serving policy shares), new share codes, joining by code.
struct SpaceController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    @Sendable func create(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let body = try await server.body(request, required: ["name"], optional: ["type", "inviteRole"])
        let space = try await server.service.createSpace(
            accessToken: bearer, name: try body.string("name"), type: try body.optionalString("type"),
            inviteRole: try body.optionalString("inviteRole") ?? "editor")
        return json(.object([.init("resourceId", .string(space.resourceId)), .init("shareCode", .string(space.shareCode))]), status: .created)
    }

    @Sendable func newCode(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let body = try await server.body(request, optional: ["role"])
        let id = try context.parameters.require("id")
        let code = try await identity.newShareCode(accessToken: bearer, resourceId: id, role: try body.optionalString("role") ?? "editor")
        return json(.object([.init("shareCode", .string(code))]), status: .created)
    }

    @Sendable func join(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        try await server.throttleSignIn(context)
        let body = try await server.body(request, required: ["shareCode"])
        let id = try await identity.joinSpace(accessToken: bearer, shareCode: try body.string("shareCode"), source: server.source(context))
        return json(.object([.init("resourceId", .string(id))]))
    }
}
