import HTTPTypes
import Hummingbird
import NIOCore
import PolicyBundle
import ServiceLifecycle

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

    /// `GET /v1/bundle/events`: Server-Sent Events, one per installed version (`BundleEvent`: ETag, revision, policy
    /// hash; never policy content), the announced version first unless `Last-Event-ID` names it, a heartbeat comment
    /// every `--bundle-heartbeat`. No bearer, as for `GET /v1/bundle`. The stream ends when the server shuts down.
    @Sendable func bundleEvents(_ request: Request, _ context: ServerContext) async throws -> Response {
        guard server.bundles != nil, let events = server.bundleEvents else {
            return problemResponse(Problem(.identity(.notFound), detail: "this server signs no bundles (no --bundle-key)"))
        }
        guard events.announced != nil else {
            return problemResponse(Problem(.server(.notReady), detail: "the active version's bundle is not built yet"))
        }
        let channel = context.channel
        let opened = events.subscribe(client: server.clientKey(context), lastEventID: request.headers[.lastEventID]) {
            channel.close(promise: nil)
        }
        let subscription: BundleEvents.Subscription
        switch opened {
        case .success(let s): subscription = s
        case .failure(.tooManyFromClient):
            return problemResponse(.throttled(retryAfter: 30, detail: "too many bundle event streams from this client"))
        case .failure(.closed):
            return problemResponse(Problem(.server(.notReady), detail: "the server is shutting down"))
        }
        let retry = max(1000, Int(events.heartbeat.components.seconds) * 1000 / 5)
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-cache", .xAccelBuffering: "no",
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { subscription.cancel() }
                try await withGracefulShutdownHandler {
                    // The head and a first frame at once, so the client (and a proxy) sees the stream open.
                    try await writer.write(ByteBuffer(string: "retry: \(retry)\n\n" + (subscription.initial?.frame ?? "")))
                    for await item in subscription.items {
                        switch item {
                        case .event(let event): try await writer.write(ByteBuffer(string: event.frame))
                        case .heartbeat: try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                        }
                    }
                } onGracefulShutdown: {
                    subscription.cancel()
                }
                try await writer.finish(nil)
            })
    }

    @Sendable func playground(_ request: Request, _ context: ServerContext) async throws -> Response { html(server.playgroundPage()) }
}

extension HTTPField.Name {
    /// The id of the last Server-Sent Event a reconnecting client saw.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    /// nginx: do not buffer this response (a stream's events would wait in the proxy's buffer).
    static let xAccelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
