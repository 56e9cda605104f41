import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// The settings a replica behind a load balancer needs: the sign-in limit and the trusted proxies.
@Suite(.startsServers) struct DeploySettingsTests {
    @Test func theClientIsTheRightmostAddressNoTrustedProxyAdded() {
        let trusted: Set<String> = ["127.0.0.1", "10.0.0.2"]
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "203.0.113.9", trusted: trusted) == "203.0.113.9")
        // A client cannot choose its own key by sending the header: nginx appends what it saw.
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "198.51.100.1, 203.0.113.9", trusted: trusted) == "203.0.113.9")
        // Two trusted hops are skipped.
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "203.0.113.9, 10.0.0.2", trusted: trusted) == "203.0.113.9")
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "2001:DB8:0::1", trusted: trusted) == "2001:db8::1")
        // An untrusted peer's header is ignored; garbage where the client should be is ignored.
        #expect(ForwardedClient.resolve(peer: "192.0.2.7", forwardedFor: "203.0.113.9", trusted: trusted) == nil)
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "not-an-address", trusted: trusted) == nil)
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: nil, trusted: trusted) == nil)
        #expect(ForwardedClient.resolve(peer: "127.0.0.1", forwardedFor: "10.0.0.2", trusted: trusted) == nil)
    }

    @Test func signInLimitAndTrustedProxiesComeFromOptionsOrTheEnvironment() throws {
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        let fromEnvironment = try ServerSettings.resolve(
            options, environment: ["GATEHOUSE_SIGNIN_LIMIT": "500/60", "GATEHOUSE_TRUSTED_PROXIES": "127.0.0.1, ::1"])
        #expect(fromEnvironment.signInLimit == RateLimit(requests: 500, window: 60))
        #expect(fromEnvironment.trustedProxies == ["127.0.0.1", "::1"])

        options.signInLimit = "20/1"
        options.trustedProxies = ["10.0.0.2"]
        let fromOptions = try ServerSettings.resolve(options, environment: ["GATEHOUSE_SIGNIN_LIMIT": "500/60"])
        #expect(fromOptions.signInLimit == RateLimit(requests: 20, window: 1))
        #expect(fromOptions.trustedProxies == ["10.0.0.2"])

        for bad in ["10", "10/0", "-1/60", "ten/60", "10/60/2"] {
            options.signInLimit = bad
            #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
        }
        options.signInLimit = nil
        options.trustedProxies = ["nginx.internal"]
        let error = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
        #expect(error?.description.contains("nginx.internal") == true)
    }
}

/// `policy serve --decision-log off|denied|all` (GATEHOUSE_DECISION_LOG): the library's decision log, switched on
/// from the server.
@Suite(.startsServers) struct DecisionLogSettingTests {
    @Test func theModeComesFromTheOptionOrTheEnvironmentAndABadOneIsNamed() throws {
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        #expect(try ServerSettings.resolve(options, environment: [:]).decisionLog == .off)
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_DECISION_LOG": "denied"]).decisionLog == .denied)
        options.decisionLog = "all"
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_DECISION_LOG": "denied"]).decisionLog == .all)
        options.decisionLog = "everything"
        let error = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
        #expect(error?.description == "--decision-log (or GATEHOUSE_DECISION_LOG) must be one of off, denied, all, sample:R (a fraction, 0 < R <= 1), not 'everything'")
        options.decisionLog = "sample:0.05"
        #expect(try ServerSettings.resolve(options, environment: [:]).decisionLog == .sample(0.05))
        options.decisionLog = nil
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_DECISION_LOG_SIGNED_OUT": "1"]).decisionLogSignedOut)
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_DECISION_LOG_LIMIT": "5/60"]).decisionLogLimit == RateLimit(requests: 5, window: 60))
    }

    /// Every duration option reads seconds from the option or its variable, and a bad one names both.
    @Test func durationsComeFromTheOptionOrTheVariableAndABadOneNamesBoth() throws {
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        let fromEnvironment = try ServerSettings.resolve(
            options, environment: ["GATEHOUSE_READ_TIMEOUT": "2.5", "GATEHOUSE_REQUEST_TIMEOUT": "7", "GATEHOUSE_MAINTENANCE_INTERVAL": "60"])
        #expect(fromEnvironment.readTimeout == .milliseconds(2500))
        #expect(fromEnvironment.requestTimeout == .seconds(7))
        #expect(fromEnvironment.maintenanceInterval == .seconds(60))
        options.requestTimeout = 3
        #expect(try ServerSettings.resolve(options, environment: ["GATEHOUSE_REQUEST_TIMEOUT": "7"]).requestTimeout == .seconds(3))
        for (variable, option) in [("GATEHOUSE_READ_TIMEOUT", "--read-timeout"), ("GATEHOUSE_MAINTENANCE_INTERVAL", "--maintenance-interval")] {
            let error = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [variable: "soon"]) }
            #expect(error?.description == "\(option) (or \(variable)) must be a positive number of seconds")
        }
    }

    /// With `denied`, a bearer's denied decision is logged and its allowed one is not; the user's export shows it.
    @Test func deniedDecisionsAreLoggedAndShownInTheExport() async throws {
        let t = try TestServer { $0.decisionLog = .denied }
        try await t.app.test(.router) { client in
            let token = try await client.execute(uri: "/v1/auth/anonymous", method: .post) { r in
                try #require(r.object["accessToken"] as? String)
            }
            for action in ["ai_suggestions", "add_source"] {
                try await client.execute(
                    uri: "/v1/decide", method: .post, headers: bearer(token).merging([.contentType: "application/json"]),
                    body: body(#"{"action": "\#(action)", "resource": {"type": "app"}}"#)) { r in
                    #expect(r.status == .ok, "\(r.text)")
                }
            }
            try await client.execute(uri: "/v1/me/export", method: .get, headers: bearer(token)) { r in
                let decisions = try #require(r.object["decisions"] as? [[String: Any]], "\(r.text)")
                #expect(decisions.count == 1, "\(decisions)")
                #expect(decisions.first?["action"] as? String == "ai_suggestions")
                #expect(decisions.first?["reason"] as? String == "requires_upgrade")
            }
        }
    }
}

extension HTTPFields {
    /// These fields with `other`'s added.
    func merging(_ other: HTTPFields) -> HTTPFields {
        var all = self
        all.append(contentsOf: other)
        return all
    }
}
