import Foundation
import PolicyServer
import Testing

/// The options of issue 22, section 2: each from its flag or its `GATEHOUSE_*` variable, a bad value refused naming
/// both spellings; and the per-client limit keys.
@Suite struct FindingSettingsTests {
    static func options() -> ServerSettings.Options {
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        return options
    }

    @Test func theNewOptionsComeFromFlagsOrTheEnvironment() throws {
        let defaults = try ServerSettings.resolve(Self.options(), environment: [:])
        #expect(!defaults.trustCallerSubjects)
        #expect(defaults.writeLimit == RateLimit(requests: 30, window: 60))
        #expect(defaults.sourceWriteLimit == RateLimit(requests: 120, window: 60))
        #expect(defaults.maintenanceInterval == .seconds(3600))
        #expect(defaults.retentionDays == 365)
        #expect(defaults.ipv6PrefixLength == 64)
        #expect(defaults.maxConnections >= 16 && defaults.maxConnections <= 10_000)

        let environment = try ServerSettings.resolve(
            Self.options(),
            environment: [
                "GATEHOUSE_TRUST_CALLER_SUBJECTS": "1", "GATEHOUSE_WRITE_LIMIT": "5/10", "GATEHOUSE_SOURCE_WRITE_LIMIT": "50/10",
                "GATEHOUSE_MAINTENANCE_INTERVAL": "2.5", "GATEHOUSE_RETENTION_DAYS": "90", "GATEHOUSE_IPV6_PREFIX": "56",
                "GATEHOUSE_MAX_CONNECTIONS": "300",
            ])
        #expect(environment.trustCallerSubjects)
        #expect(environment.writeLimit == RateLimit(requests: 5, window: 10))
        #expect(environment.sourceWriteLimit == RateLimit(requests: 50, window: 10))
        #expect(environment.maintenanceInterval == .milliseconds(2500))
        #expect(environment.retentionDays == 90)
        #expect(environment.ipv6PrefixLength == 56)
        #expect(environment.maxConnections == 300)

        var flags = Self.options()
        flags.writeLimit = "7/60"
        flags.maxConnections = 12
        let fromFlags = try ServerSettings.resolve(flags, environment: ["GATEHOUSE_WRITE_LIMIT": "5/10", "GATEHOUSE_MAX_CONNECTIONS": "300"])
        #expect(fromFlags.writeLimit == RateLimit(requests: 7, window: 60))
        #expect(fromFlags.maxConnections == 12)
    }

    @Test func badValuesNameTheOptionAndItsVariable() {
        let cases: [(String, String, String)] = [
            ("GATEHOUSE_WRITE_LIMIT", "ten", "--write-limit"), ("GATEHOUSE_SOURCE_WRITE_LIMIT", "1/0", "--source-write-limit"),
            ("GATEHOUSE_MAINTENANCE_INTERVAL", "0", "--maintenance-interval"), ("GATEHOUSE_RETENTION_DAYS", "7", "--retention"),
            ("GATEHOUSE_IPV6_PREFIX", "129", "--ipv6-prefix"), ("GATEHOUSE_MAX_CONNECTIONS", "0", "--max-connections"),
        ]
        for (variable, value, option) in cases {
            do {
                _ = try ServerSettings.resolve(Self.options(), environment: [variable: value])
                Issue.record("\(variable)=\(value) was accepted")
            } catch {
                #expect(error.description.contains(option) && error.description.contains(variable), "\(error.description)")
            }
        }
    }

    @Test func limitKeysAreIPv4AddressesAndIPv6Prefixes() {
        #expect(ForwardedClient.limitKey("192.0.2.7") == "192.0.2.7")
        #expect(ForwardedClient.limitKey("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
        #expect(ForwardedClient.limitKey("2001:db8:1:2:ffff::1") == ForwardedClient.limitKey("2001:db8:1:2::9"))
        #expect(ForwardedClient.limitKey("2001:db8:1:3::1") != ForwardedClient.limitKey("2001:db8:1:2::1"))
        #expect(ForwardedClient.limitKey("2001:db8:1:2:3:4:5:6", ipv6Prefix: 48) == "2001:db8:1::/48")
        #expect(ForwardedClient.limitKey("2001:db8::1", ipv6Prefix: 128) == "2001:db8::1/128")
        #expect(ForwardedClient.limitKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(ForwardedClient.limitKey("local") == "local")
    }
}
