import Foundation
import PolicyServer
import Testing

/// The settings a replica behind a load balancer needs: the sign-in limit and the trusted proxies.
@Suite struct DeploySettingsTests {
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
