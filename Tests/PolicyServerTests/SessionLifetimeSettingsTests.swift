import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyModel
import PolicyServer
import Testing
import GatehouseTestSupport

/// `--access-token-lifetime` and `--refresh-grace-period`: from the option or the variable, a bad value naming both,
/// and the lifetime reaching the tokens the server issues.
@Suite(.startsServers) struct SessionLifetimeSettingsTests {
    @Test func theLifetimesComeFromTheOptionOrTheVariableAndABadOneNamesBoth() throws {
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        let defaults = try ServerSettings.resolve(options, environment: [:])
        #expect(defaults.accessTokenLifetime == nil && defaults.refreshGracePeriod == nil)
        let fromEnvironment = try ServerSettings.resolve(
            options, environment: ["GATEHOUSE_ACCESS_TOKEN_LIFETIME": "120", "GATEHOUSE_REFRESH_GRACE_PERIOD": "0.5"])
        #expect(fromEnvironment.accessTokenLifetime == .seconds(120) && fromEnvironment.refreshGracePeriod == .milliseconds(500))
        options.accessTokenLifetime = 60
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_ACCESS_TOKEN_LIFETIME": "120"]).accessTokenLifetime == .seconds(60))
        for (variable, option) in [
            ("GATEHOUSE_ACCESS_TOKEN_LIFETIME", "--access-token-lifetime"), ("GATEHOUSE_REFRESH_GRACE_PERIOD", "--refresh-grace-period"),
        ] {
            var bare = ServerSettings.Options()
            bare.policies = "p"
            bare.database = "d"
            let error = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(bare, environment: [variable: "0"]) }
            #expect(error?.description == "\(option) (or \(variable)) must be a positive number of seconds")
        }
    }

    @Test func theServerIssuesAccessTokensOfTheConfiguredLifetime() async throws {
        let t = try TestServer { $0.accessTokenLifetime = .seconds(42) }
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                let text = try #require(r.object["accessExpiresAt"] as? String)
                let expiry = try #require(Timestamp.parse(text))
                // Issued before this line ran: at most 42 s ahead (the default would be 900).
                #expect(expiry.timeIntervalSinceNow <= 42, "\(text)")
                #expect(expiry.timeIntervalSinceNow > 0, "\(text)")
            }
        }
    }
}
