import Hummingbird
import NIOCore

/// `/healthz`, `/readyz` and `/metrics`: whether the process and its database answer, and what it counted.
struct HealthController {
    let server: GatehouseServer

    @Sendable func healthz(_ request: Request, _ context: ServerContext) async throws -> Response { text("ok\n") }

    @Sendable func readyz(_ request: Request, _ context: ServerContext) async throws -> Response {
        switch await server.databaseState() {
        case .ready where server.notificationsDown:
            text("ready; fact notifications down: cached decision facts are trusted for at most 1 s\n")
        case .ready: text("ready\n")
        case .readOnly: problemResponse(.notReady("the database answers reads but refuses writes"))
        case .unavailable: problemResponse(.notReady("the database does not answer, or a table requests use is missing"))
        }
    }

    @Sendable func metrics(_ request: Request, _ context: ServerContext) async throws -> Response {
        let changes = server.service.identity.factChanges
        let exposition = server.metrics.exposition(
            security: server.service.identity.counters.snapshot, notificationsUp: changes.sharedWithOthers ? changes.heardFromOthers : nil,
            decisionLog: server.service.decisionLog == .off ? nil : server.service.recorder.counts, shadow: server.service.shadow)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: exposition)))
    }
}
