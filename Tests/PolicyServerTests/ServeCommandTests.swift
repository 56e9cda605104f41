import Foundation
import Identity
import Logging
import PostgresNIO
import Testing
import GatehouseTestSupport

@testable import IdentityPostgres

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `policy serve` as a process on a loopback port: the first line, answers, SIGHUP, SIGTERM.
@Suite(.startsServers) struct ServeCommandTests {
    static func post(_ url: URL, _ body: String) async throws -> (Int, [String: String], String) {
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        // URLSession would say application/x-www-form-urlencoded, which the server refuses (415).
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        let headers = (http.allHeaderFields as? [String: String]) ?? [:]
        return (http.statusCode, headers, String(decoding: data, as: UTF8.self))
    }

    @Test func servesOnAFreePortReloadsOnHangupAndStopsOnTerm() async throws {
        let t = try TestServer()  // a policy copy and a folder; its own in-process server is not used
        let process = try await Program(
            ServedProcess.binary, ["serve", "--policies", t.policies.path],
            environment: .only([
                "GATEHOUSE_DATABASE": t.dir.appendingPathComponent("served.sqlite").path, "GATEHOUSE_PORT": "0", "GATEHOUSE_HOST": "127.0.0.1",
                "GATEHOUSE_TRUST_CALLER_SUBJECTS": "1",
            ].merging(TestDeadlines.environment) { own, _ in own })
        ).start()
        defer { process.kill() }

        let line = try await process.nextLine(within: .seconds(60))
        let match = try #require(line.wholeMatch(of: /listening on http:\/\/127\.0\.0\.1:(\d+)/), "first line: \(line)")
        let port = try #require(Int(match.1))
        #expect(port > 0 && port != 8080)
        #expect(FileManager.default.fileExists(atPath: t.dir.appendingPathComponent("served.sqlite").path))
        let base = URL(string: "http://127.0.0.1:\(port)")!

        let request = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
        let (status, headers, text) = try await Self.post(base.appendingPathComponent("v1/decide"), request)
        #expect(status == 200)
        #expect(text.contains("requires_upgrade"))
        let first = try #require(headers.first { $0.key.lowercased() == "gatehouse-policy" }?.value)

        // An edit, then SIGHUP: the next answer names the new version (bounded wait).
        let tiers = try t.read("tiers.yaml")
        try t.write("tiers.yaml", tiers.replacingOccurrences(of: "AI Suggestions", with: "AI Help"))
        process.signal(SIGHUP)
        var latest = first
        for _ in 0..<100 where latest == first {
            try await Task.sleep(for: .milliseconds(50))
            let (_, h, _) = try await Self.post(base.appendingPathComponent("v1/decide"), request)
            latest = h.first { $0.key.lowercased() == "gatehouse-policy" }?.value ?? first
        }
        #expect(latest != first)

        process.signal(SIGTERM)
        let ended = await process.wait(within: .seconds(10))
        #expect(ended != nil)
        if let ended { #expect(ended.status == 0) }
    }

    @Test func aPolicySetThatDoesNotLoadStopsTheStartWithItsDiagnostics() async throws {
        let t = try TestServer()
        try t.write("tiers.yaml", "tiers: [oops\n")
        let (status, err) = try await runServeToExit(
            ["--policies", t.policies.path, "--database", t.dir.appendingPathComponent("x.sqlite").path, "--port", "0"], environment: nil)
        #expect(status == 1)
        #expect(err.contains("tiers.yaml"))
    }

    @Test func aMissingRequiredOptionIsAUsageError() async throws {
        let (status, err) = try await runServeToExit(["--port", "0"])
        #expect(status == 64)
        #expect(err.contains("GATEHOUSE_POLICIES"))
    }

    @Test func aDatabaseURLItCannotUseIsAUsageErrorNamingTheOptionAndNotThePassword() async throws {
        let (status, err) = try await runServeToExit(
            ["--policies", "policies/research-crawler", "--port", "0", "--database", "postgres://:hunter2secret@127.0.0.1/"])
        #expect(status == 64)
        #expect(err.contains("--database") && err.contains("PostgreSQL URL"), "\(err)")
        #expect(!err.contains("hunter2secret"))
    }

    /// `--database postgres://...`: the pool runs as a service, the schema is migrated before the
    /// first line, sign-in works, and SIGTERM stops the server and then the pool (exit 0).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["GATEHOUSE_TEST_POSTGRES_URL"] != nil, "GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func servesOnPostgresAndStopsOnTerm() async throws {
        let url = try #require(ProcessInfo.processInfo.environment["GATEHOUSE_TEST_POSTGRES_URL"])
        let schema = "gh_serve_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let t = try TestServer()
        let (process, base) = try await ServedProcess.start(
            ["--policies", t.policies.path, "--database", TestDeadlines.postgres(url + (url.contains("?") ? "&" : "?") + "schema=\(schema)")])
        defer { process.kill() }
        var ready = URLRequest(url: base.appendingPathComponent("readyz"), timeoutInterval: 10)
        ready.httpMethod = "GET"
        let (_, readyResponse) = try await URLSession.shared.data(for: ready)
        #expect((readyResponse as? HTTPURLResponse)?.statusCode == 200)
        let (status, _, body) = try await Self.post(base.appendingPathComponent("v1/auth/anonymous"), "{}")
        #expect(status == 200 || status == 201, "\(body)")
        #expect(body.contains("accessToken"))
        process.signal(SIGTERM)
        let ended = await process.wait(within: .seconds(10))
        #expect(ended != nil)
        if let ended { #expect(ended.status == 0) }
        // The rows went to the schema named in the URL; drop it.
        var configuration = try PostgresLocation(url: url)
        configuration.schema = schema
        try await Self.reportingPostgresErrors { try await Self.checkAndDrop(configuration, schema: schema) }
    }

    /// Runs `body`, recording a PostgreSQL error with its details (its description hides them).
    static func reportingPostgresErrors(_ body: () async throws -> Void) async throws {
        do { try await body() } catch let error as PSQLError {
            Issue.record("PostgreSQL: \(String(reflecting: error))")
        }
    }

    static func checkAndDrop(_ configuration: PostgresLocation, schema: String) async throws {
        try await PostgresStore.withStore(configuration) { store in
            #expect(try await store.read { tx in try await tx.fetchAll(SessionRow.self, [:]).count } == 1)
            // Without the store's deadlines: under the whole suite the drop may wait on locks (55P03 at 2 s was seen)
            // and outlast 5 s, as StoreKinds' cleanup also allows.
            try await store.client.withConnection { connection in
                try await connection.query("SET lock_timeout = 0", logger: Logger(label: "gatehouse-test"))
                try await connection.query("SET statement_timeout = 0", logger: Logger(label: "gatehouse-test"))
                try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \"\(schema)\" CASCADE"), logger: Logger(label: "gatehouse-test"))
            }
        }
    }
}

/// Runs `policy serve ARGUMENTS` that is expected to stop on its own (a usage or load error): its exit status
/// and standard error. `environment` nil inherits this process's; the default is an empty one, so no
/// `GATEHOUSE_*` variable fills a missing option.
private func runServeToExit(_ arguments: [String], environment: [String: String]? = [:]) async throws -> (status: Int32, stderr: String) {
    let run = try await Program(ServedProcess.binary, ["serve"] + arguments, environment: environment.map { .only($0) } ?? .inherited).run()
    return (run.status, run.standardError)
}
