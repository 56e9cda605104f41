import Foundation
import Gatehouse
import Hummingbird
import NIOCore
import PolicyModel

/// The signed-in account as its owner sees and changes it: profile, username, privacy settings, export, deletion.
/// The writes are under the write quotas (`RouteBuilder.write`).
struct AccountController {
    let server: GatehouseServer
    var identity: IdentityService { server.service.identity }

    @Sendable func profile(_ request: Request, _ context: ServerContext) async throws -> Response {
        json(profileJSON(try await identity.profile(accessToken: try requiredBearer(request))))
    }

    @Sendable func setUsername(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let body = try await server.body(request, required: ["username"])
        try await identity.setUsername(accessToken: bearer, username: try body.string("username"), source: server.source(context))
        return noContent()
    }

    @Sendable func privacy(_ request: Request, _ context: ServerContext) async throws -> Response {
        json(privacyJSON(try await identity.privacySettings(accessToken: try requiredBearer(request))))
    }

    /// The fields given change; the others keep their value.
    @Sendable func setPrivacy(_ request: Request, _ context: ServerContext) async throws -> Response {
        let bearer = try requiredBearer(request)
        let body = try await server.body(request, optional: ["analytics", "crashReporting", "aiSuggestions", "dataSharing"])
        var settings = try await identity.privacySettings(accessToken: bearer)
        try settings.apply(body)
        try await identity.setPrivacySettings(accessToken: bearer, settings)
        return json(privacyJSON(settings))
    }

    @Sendable func export(_ request: Request, _ context: ServerContext) async throws -> Response {
        // The user's decision records still queued are written first, so the export shows them.
        await server.service.flushDecisionRecords()
        let data = try await identity.exportData(accessToken: try requiredBearer(request))
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    @Sendable func delete(_ request: Request, _ context: ServerContext) async throws -> Response {
        // Queued decision records are written first, so the erasure clears the user's too.
        await server.service.flushDecisionRecords()
        try await identity.deleteAccount(accessToken: try requiredBearer(request))
        return noContent()
    }
}

extension PrivacySettings {
    /// The settings with the fields `body` gives changed (`analytics`, `crashReporting`, `aiSuggestions`, `dataSharing`).
    mutating func apply(_ body: IdentityBody) throws(RequestError) {
        if let v = try body.optionalBool("analytics") { analytics = v }
        if let v = try body.optionalBool("crashReporting") { crashReporting = v }
        if let v = try body.optionalBool("aiSuggestions") { aiSuggestions = v }
        if let v = try body.optionalString("dataSharing") {
            guard let sharing = DataSharing(rawValue: v) else {
                throw RequestError(field: "dataSharing", "must be one of \(DataSharing.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            dataSharing = sharing
        }
    }
}
