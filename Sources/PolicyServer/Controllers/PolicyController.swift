import Hummingbird

/// `/v1/policy` (the active version and the last refused one) and `/playground` (its matrix and a request editor).
struct PolicyController {
    let server: GatehouseServer

    @Sendable func status(_ request: Request, _ context: ServerContext) async throws -> Response { json(server.policyStatus()) }

    @Sendable func playground(_ request: Request, _ context: ServerContext) async throws -> Response { html(server.playgroundPage()) }
}
