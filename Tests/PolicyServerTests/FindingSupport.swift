import Foundation
import HTTPTypes
import HummingbirdTesting
import PolicyServer

/// Settings for a test server as `policy serve` would resolve them from `environment` alone (the policy folder and
/// database of the test server kept, a free port), so a test can name an option by its `GATEHOUSE_*` variable.
func fromEnvironment(_ environment: [String: String]) -> (inout ServerSettings) -> Void {
    { settings in
        var options = ServerSettings.Options()
        options.policies = settings.policies
        options.database = settings.database
        guard var resolved = try? ServerSettings.resolve(options, environment: environment) else { fatalError("bad test environment \(environment)") }
        resolved.port = 0
        // The test's generous deadlines stay unless the environment names its own.
        if environment["GATEHOUSE_REQUEST_TIMEOUT"] == nil { resolved.requestTimeout = settings.requestTimeout }
        if environment["GATEHOUSE_READ_TIMEOUT"] == nil { resolved.readTimeout = settings.readTimeout }
        settings = resolved
    }
}

/// A new anonymous session's access token (and user id).
func anonymous(_ client: some TestClientProtocol, headers: HTTPFields = [:]) async throws -> (token: String, userId: String) {
    try await client.execute(uri: "/v1/auth/anonymous", method: .post, headers: headers) { r in
        ((r.object["accessToken"] as? String) ?? "", (r.object["userId"] as? String) ?? "")
    }
}
