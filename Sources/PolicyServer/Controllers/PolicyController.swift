import HTTPTypes
import Hummingbird
import NIOCore
import PolicyBundle

/// `/v1/policy` (the active version and the last refused one) and `/playground` (its matrix and a request editor).
struct PolicyController {
    let server: GatehouseServer

    @Sendable func status(_ request: Request, _ context: ServerContext) async throws -> Response { json(server.policyStatus()) }

    /// `GET /v1/bundle`: the active version's signed bundle, with a strong `ETag`; `If-None-Match` naming it → 304.
    @Sendable func bundle(_ request: Request, _ context: ServerContext) async throws -> Response {
        guard let bundles = server.bundles else {
            return problemResponse(Problem(.identity(.notFound), detail: "this server signs no bundles (no --bundle-key)"))
        }
        guard let current = bundles.current else {
            return problemResponse(Problem(.server(.notReady), detail: "the active version's bundle is not built yet"))
        }
        var headers: HTTPFields = [
            .eTag: current.etag, .cacheControl: "no-cache", .gatehousePolicy: current.manifest.policyHash,
        ]
        if let given = request.headers[.ifNoneMatch], PolicyBundles.matches(ifNoneMatch: given, etag: current.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/vnd.gatehouse.bundle"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: current.bytes)))
    }

    @Sendable func playground(_ request: Request, _ context: ServerContext) async throws -> Response { html(server.playgroundPage()) }
}
