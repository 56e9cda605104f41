import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /console` and its script and style sheet (`policy serve --console`; 404 without it). Each answer carries the
/// console's headers: a Content-Security-Policy that allows only this origin's script and style (no inline script,
/// no other origin, no framing), `no-store`, `nosniff` and no referrer.
struct ConsolePages: Sendable {
    let enabled: Bool

    /// The Content-Security-Policy of every console answer.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The headers every console page and every console route's answer carries.
    static func protect(_ headers: inout HTTPFields) {
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.xFrameOptions] = "DENY"
        headers[.referrerPolicy] = "no-referrer"
    }

    @Sendable func index(_ request: Request, _ context: ServerContext) async throws -> Response {
        try asset(ConsoleAssets.index, "text/html; charset=utf-8")
    }

    @Sendable func script(_ request: Request, _ context: ServerContext) async throws -> Response {
        try asset(ConsoleAssets.script, "text/javascript; charset=utf-8")
    }

    @Sendable func style(_ request: Request, _ context: ServerContext) async throws -> Response {
        try asset(ConsoleAssets.style, "text/css; charset=utf-8")
    }

    private func asset(_ text: String, _ type: String) throws -> Response {
        guard enabled else { throw Problem(.identity(.notFound), detail: "this server serves no console (policy serve --console)") }
        var headers: HTTPFields = [.contentType: type]
        Self.protect(&headers)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
