import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// `/metrics` follows Prometheus' conventions: each metric family has a `# HELP` and a `# TYPE` line, counts are
/// counters named `_total`, and nothing that only ever grows is exported as a gauge.
@Suite(.startsServers) struct MetricsExpositionTests {
    @Test func everyFamilyHasHelpAndCountsAreTotals() async throws {
        let t = try TestServer()
        // Move the families that appear only once used: a decision, a refused PIN sign-in (a security event).
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide", method: .post, body: body(DecisionRouteTests.freeAI)) { _ in }
            try await client.execute(
                uri: "/v1/auth/pin/signin", method: .post, headers: [.contentType: "application/json"],
                body: body(#"{"username": "nobody-here", "pin": "2580"}"#)) { _ in }
            try await client.execute(uri: "/metrics", method: .get) { r in
                let text = String(buffer: r.body)
                var helped: Set<String> = [], typed: [String: String] = [:], sampled: Set<String> = []
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
                    if line.hasPrefix("# HELP "), parts.count >= 4 { helped.insert(parts[2]) }
                    else if line.hasPrefix("# TYPE "), parts.count >= 4 { typed[parts[2]] = parts[3] }
                    else if !line.hasPrefix("#") { sampled.insert(String(line.prefix { $0 != "{" && $0 != " " })) }
                }
                #expect(typed["gatehouse_decisions_total"] == "counter")
                #expect(typed["gatehouse_security_events_total"] == "counter", "\(text)")
                for (family, type) in typed {
                    #expect(helped.contains(family), "\(family) has no # HELP line")
                    if type == "counter" { #expect(family.hasSuffix("_total"), "counter \(family) is not named _total") }
                    #expect(type != "gauge" || !family.hasSuffix("_total"), "\(family) is a gauge named like a counter")
                }
                for sample in sampled {
                    let family = ["_bucket", "_sum", "_count"].reduce(sample) { name, suffix in
                        name.hasSuffix(suffix) && typed[String(name.dropLast(suffix.count))] == "histogram" ? String(name.dropLast(suffix.count)) : name
                    }
                    #expect(typed[family] != nil, "sample \(sample) has no # TYPE line")
                }
            }
        }
    }
}
