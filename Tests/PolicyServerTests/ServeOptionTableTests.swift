import Foundation
import PolicyServer
import Testing
import GatehouseTestSupport

/// `policy serve`'s options are declared where ArgumentParser reads them (Serve.swift), carried in
/// `ServerSettings.Options`, and backed by `ServerSettings.Variable`: these tests make the three one statement in
/// effect, so an option added to one place and not the others fails here.
@Suite(.startsServers) struct ServeOptionTableTests {
    /// The long options `policy serve --help` lists, besides `--help` and `--version`.
    static func helpOptions() async throws -> Set<String> {
        let text = try await Program(ServedProcess.binary, ["serve", "--help"]).run().standardOutput
        let options = text.split(whereSeparator: \.isWhitespace).compactMap { word -> String? in
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: ",.;:()[]<>"))
            guard trimmed.hasPrefix("--"), trimmed.count > 2, trimmed.dropFirst(2).allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }),
                trimmed.dropFirst(2).first?.isLetter == true
            else { return nil }
            return trimmed
        }
        return Set(options).subtracting(["--help", "--version"])
    }

    @Test func theCommandsOptionsAreTheVariableTables() async throws {
        let table = Set(ServerSettings.Variable.allCases.compactMap(\.option))
        let listed = try await Self.helpOptions()
        #expect(table.subtracting(listed).sorted() == [], "in ServerSettings.Variable but not an option of policy serve")
        #expect(listed.subtracting(table).sorted() == [], "an option of policy serve without a GATEHOUSE_* variable in ServerSettings.Variable")
    }

    @Test func optionsCarriesOneFieldPerOption() {
        let fields = Mirror(reflecting: ServerSettings.Options()).children.count
        #expect(fields == ServerSettings.Variable.allCases.compactMap(\.option).count)
    }

    /// The names are spelled from the case names (`ServerSettings.Variable`); deployments set them, so they are pinned.
    @Test func theVariablesAndOptionsAreNamedSo() {
        let names = ServerSettings.Variable.allCases.map { "\($0.rawValue) \($0.option ?? "-")" }
        #expect(names == [
            "GATEHOUSE_POLICIES --policies", "GATEHOUSE_DATABASE --database", "GATEHOUSE_HOST --host", "GATEHOUSE_PORT --port",
            "GATEHOUSE_APPLE_CLIENT_ID --apple-client-id", "GATEHOUSE_APPLE_JWKS --apple-jwks",
            "GATEHOUSE_OPERATOR_TOKEN_FILE --operator-token-file", "GATEHOUSE_OPERATOR_TOKEN -", "GATEHOUSE_STRICT_RELOAD --strict-reload",
            "GATEHOUSE_BODY_LIMIT --body-limit", "GATEHOUSE_SIGNIN_LIMIT --sign-in-limit", "GATEHOUSE_TRUSTED_PROXIES --trusted-proxy",
            "GATEHOUSE_READ_TIMEOUT --read-timeout", "GATEHOUSE_DECISION_LOG --decision-log",
            "GATEHOUSE_DECISION_LOG_SIGNED_OUT --decision-log-signed-out", "GATEHOUSE_DECISION_LOG_LIMIT --decision-log-limit",
            "GATEHOUSE_APP_STORE_BUNDLE_ID --app-store-bundle-id", "GATEHOUSE_APP_STORE_ENVIRONMENT --app-store-environment",
            "GATEHOUSE_APP_STORE_ROOT_CERTIFICATE --app-store-root-certificate", "GATEHOUSE_TRUST_CALLER_SUBJECTS --trust-caller-subjects",
            "GATEHOUSE_WRITE_LIMIT --write-limit", "GATEHOUSE_SOURCE_WRITE_LIMIT --source-write-limit",
            "GATEHOUSE_MAINTENANCE_INTERVAL --maintenance-interval", "GATEHOUSE_RETENTION_DAYS --retention",
            "GATEHOUSE_IPV6_PREFIX --ipv6-prefix", "GATEHOUSE_MAX_CONNECTIONS --max-connections",
            "GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT --max-connections-per-client",
            "GATEHOUSE_REQUEST_TIMEOUT --request-timeout", "GATEHOUSE_ACCESS_TOKEN_LIFETIME --access-token-lifetime",
            "GATEHOUSE_REFRESH_GRACE_PERIOD --refresh-grace-period", "GATEHOUSE_DECISION_CACHE_ENTRIES --decision-cache-entries",
            "GATEHOUSE_BUNDLE_KEY --bundle-key", "GATEHOUSE_NOTIFICATION_LIMIT --notification-limit", "GATEHOUSE_SHADOW --shadow",
            "GATEHOUSE_CONSOLE --console",
        ])
        #expect(ServerSettings.Variable(rawValue: "GATEHOUSE_SIGNIN_LIMIT") == .signInLimit)
        #expect(ServerSettings.Variable(rawValue: "GATEHOUSE_SIGN_IN_LIMIT") == nil)
    }

    /// Every variable and option is documented where operators look (docs/server.md or docs/deploy.md).
    @Test func everyOptionAndVariableIsDocumented() throws {
        let docs = try ["docs/server.md", "docs/deploy.md"].map {
            try String(contentsOf: TestServer.root.appendingPathComponent($0), encoding: .utf8)
        }.joined()
        for variable in ServerSettings.Variable.allCases {
            #expect(docs.contains(variable.rawValue), "\(variable.rawValue) is not documented")
            if let option = variable.option { #expect(docs.contains(option), "\(option) is not documented") }
        }
    }
}
