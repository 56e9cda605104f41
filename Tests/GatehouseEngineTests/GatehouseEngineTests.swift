import Foundation
import GatehouseEngine
import PolicyVerification
import Testing
import Yams
import GatehouseTestSupport

let root = Repository.root

/// The shipped policy sets: every folder under policies/.
let shippedSets = PolicyCompiler.policySets(under: root.appendingPathComponent("policies").path)

/// Runs a command to the end; stdout, and the exit status.
func run(_ arguments: [String], in directory: URL) async throws -> (status: Int32, out: Data, err: String) {
    let run = try await Program(path: "/usr/bin/env", arguments, in: directory).run()
    return (run.status, Data(run.standardOutput.utf8), run.standardError)
}

@Suite(.startsServers) struct GatehouseEngineTests {
    // MARK: Loading

    @Test func loadsEveryShippedSetFromItsFolderAndDecidesAsThePolicy() throws {
        #expect(shippedSets.count >= 3)
        for path in shippedSets {
            let engine = try Engine(directory: path)
            let direct = try #require(PolicyCompiler.load(directory: path, relativePaths: true).policy)
            let request = Request(action: "view", resource: Resource(type: "project"))
            #expect(engine.decide(request) == direct.decide(request))
            #expect(engine.explain(request).decision == direct.decide(request))
        }
    }

    @Test func loadsFromInMemoryFilesAndReportsDiagnosticsWhenTheSetDoesNotCompile() throws {
        // The files of a shipped set, handed over as bytes, compile to the policy its folder loads as.
        let path = try #require(shippedSets.first)
        var files: [String: [UInt8]] = [:]
        for file in PolicyCompiler.policyFiles(in: path) {
            files[String(file.dropFirst(path.count + 1))] = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        }
        #expect(!files.isEmpty)
        let engine = try Engine(name: URL(fileURLWithPath: path).lastPathComponent, files: files)
        let folder = try Engine(directory: path)
        #expect(engine.policy.resourceTypeNames == folder.policy.resourceTypeNames)
        for cell in DecisionMatrix(policy: folder.policy).tables.flatMap({ $0.cells.joined() }) {
            #expect(engine.decide(cell.request) == folder.decide(cell.request))
        }
        #expect(throws: PolicyLoadFailure.self) { try Engine(name: "mem", files: [:]) }
        do {
            _ = try Engine(name: "mem", files: ["bad.yaml": Array("resources: [".utf8)])
            Issue.record("a set that does not parse should not load")
        } catch {
            #expect(!error.errors.isEmpty)
            #expect(error.description.contains("bad.yaml"))
        }
    }

    @Test func loadsFromABundleResourceFolder() throws {
        let bundle = try #require(Bundle(path: root.appendingPathComponent("policies").path))
        let name = URL(fileURLWithPath: try #require(shippedSets.first)).lastPathComponent
        let engine = try Engine(bundle: bundle, folder: name)
        #expect(!engine.policy.resourceTypeNames.isEmpty)
        #expect(throws: PolicyLoadFailure.self) { try Engine(bundle: bundle, folder: "no-such-set") }
    }

    @Test func checkReturnsAnAllowAndThrowsTheDenyDecision() throws {
        let engine = try Engine(directory: try #require(shippedSets.first))
        let unknown = Request(action: "no_such_action", resource: Resource(type: "no_such_type"))
        do {
            try engine.check(unknown)
            Issue.record("an unknown action should be denied")
        } catch {
            #expect(error.decision.reason == .defaultDeny)
            #expect(error.decision == engine.decide(unknown))
        }
        // Some request of the set's matrix is allowed; check returns that decision.
        let allowed = DecisionMatrix(policy: engine.policy).tables.flatMap { $0.cells.joined() }.first { $0.decision.isAllowed }
        let cell = try #require(allowed)
        #expect(try engine.check(cell.request) == cell.decision)
    }

    // MARK: One set of types on both sides

    /// Every cell of every shipped set's matrix: decided in-process, written with the server's `DecisionWriter`,
    /// decoded, equal to the decision in-process.
    @Test func everyMatrixCellOfEveryShippedSetRoundTripsThroughTheContractJSON() throws {
        var cells = 0
        var withFigures = 0
        var withLocation = 0
        for path in shippedSets {
            let engine = try Engine(directory: path)
            for table in DecisionMatrix(policy: engine.policy).tables {
                for cell in table.cells.joined() {
                    let decision = engine.decide(cell.request)
                    var bytes: [UInt8] = []
                    DecisionWriter.append(decision, to: &bytes)
                    let decoded = try JSONDecoder().decode(Decision.self, from: Data(bytes))
                    #expect(decoded == decision, "\(path) \(table.resourceType): \(String(decoding: bytes, as: UTF8.self))")
                    #expect(decoded.jsonBytes == bytes)
                    cells += 1
                    if decision.limit != nil { withFigures += 1 }
                    if decision.policy != nil { withLocation += 1 }
                }
            }
        }
        #expect(cells > 100)
        #expect(withFigures > 0)  // limit, used, remaining are covered
        #expect(withLocation > 0)
    }

    /// `Request` and `Decision` are `Codable` with the contract's JSON: every matrix cell's request encodes to what the
    /// server's reader reads back as the same request, and decodes from what `Request.json` writes; every decision
    /// encodes to the value `DecisionWriter` writes.
    @Test func everyMatrixCellsRequestAndDecisionRoundTripThroughCodable() throws {
        var cells = 0
        for path in shippedSets {
            let engine = try Engine(directory: path)
            for cell in DecisionMatrix(policy: engine.policy).tables.flatMap({ $0.cells.joined() }) {
                let request = cell.request
                let encoded = try JSONEncoder().encode(request)
                #expect(try Request(json: [UInt8](encoded)) == request, "\(String(decoding: encoded, as: UTF8.self))")
                #expect(try JSONDecoder().decode(Request.self, from: Data(request.json.rendered().utf8)) == request)
                let decision = engine.decide(request)
                let decisionBytes = try JSONEncoder().encode(decision)
                #expect(try Value.parseJSON(String(decoding: decisionBytes, as: UTF8.self)) == Value.parseJSON(String(decoding: decision.jsonBytes, as: UTF8.self)))
                #expect(try JSONDecoder().decode(Decision.self, from: decisionBytes) == decision)
                cells += 1
            }
        }
        #expect(cells > 100)
    }

    @Test func requestDecodingRefusesWhatTheContractDoesNotSayNamingTheField() throws {
        let full = Request(
            subject: Subject(
                id: "u1", tier: "pro", subscriptionExpiry: Date(timeIntervalSince1970: 1_900_000_000.25), roles: ["customer", "admin"],
                auth: Authentication(method: "pin", verifiedAt: Date(timeIntervalSince1970: 1_800_000_000)), attributes: ["analytics": .bool(true)]),
            action: "edit", resource: Resource(type: "project", id: "p1", ownerId: "u2", members: ["u1": "editor"], usage: ["sources": 49],
                attributes: ["tags": .list([.string("a"), .int(2)])]),
            context: Context(now: Date(timeIntervalSince1970: 1_850_000_000), attributes: ["amount": .double(12.5)]))
        #expect(try JSONDecoder().decode(Request.self, from: JSONEncoder().encode(full)) == full)
        #expect(try Request(json: [UInt8](JSONEncoder().encode(full))) == full)
        for (text, field) in [
            (#"{"action":"a","resource":{"type":"t"},"extra":1}"#, "extra"),
            (#"{"action":"a","resource":{"type":"t","usage":{"sources":-1}}}"#, "resource.usage.sources"),
            (#"{"resource":{"type":"t"}}"#, "action"),
        ] {
            do {
                _ = try JSONDecoder().decode(Request.self, from: Data(text.utf8))
                Issue.record("decoded \(text)")
            } catch let DecodingError.dataCorrupted(context) {
                #expect((context.underlyingError as? RequestError)?.field == field, "\(text)")
            }
        }
    }

    @Test func decisionDecodingReadsEveryFieldAndRefusesWhatTheContractDoesNotSay() throws {
        let json = #"{"decision":"deny","reason":"limit_exceeded","message":"Up to 50","limit":50,"used":50,"remaining":0,"upgradeTo":"pro","policy":"c:/sets/a.yaml:12:5"}"#
        let decision = try JSONDecoder().decode(Decision.self, from: Data(json.utf8))
        #expect(decision == Decision(
            effect: .deny, reason: .limitExceeded, message: "Up to 50", limit: 50, used: 50, remaining: 0, upgradeTo: "pro",
            policy: SourceLocation(file: "c:/sets/a.yaml", line: 12, column: 5)))
        #expect(String(decoding: decision.jsonBytes, as: UTF8.self) == json)
        for bad in [
            #"{"decision":"allow","reason":"allowed","extra":1}"#,  // unknown field
            #"{"reason":"allowed"}"#,  // no decision
            #"{"decision":"maybe","reason":"allowed"}"#,  // unknown effect
            #"{"decision":"deny","reason":"nope"}"#,  // unknown reason
            #"{"decision":"deny","reason":"default_deny","policy":"a.yaml:x:1"}"#,  // not file:line:column
            #"{"decision":"deny","reason":"default_deny","policy":":1:1"}"#,  // no file
            #"{"decision":"deny","reason":"limit_exceeded","limit":"50"}"#,  // wrong type
        ] {
            #expect(throws: DecodingError.self, "\(bad)") { try JSONDecoder().decode(Decision.self, from: Data(bad.utf8)) }
        }
    }

    // MARK: The dependency closure

    /// Target and product names reachable from `target` in `swift package dump-package`'s JSON.
    static func closure(of target: String, in package: [String: Any]) -> Set<String> {
        let targets = (package["targets"] as? [[String: Any]] ?? []).reduce(into: [String: [[String: Any]]]()) {
            $0[$1["name"] as? String ?? ""] = $1["dependencies"] as? [[String: Any]] ?? []
        }
        var seen: Set<String> = [target]
        var expanded: Set<String> = []
        var queue = [target]
        while let name = queue.popLast() {
            guard expanded.insert(name).inserted else { continue }
            for dependency in targets[name] ?? [] {
                for kind in ["byName", "target", "product"] {
                    guard let parts = dependency[kind] as? [Any] else { continue }
                    // A product: its name and its package's ("GRDB", "GRDB.swift"); a target: its name.
                    let names = parts.prefix(kind == "product" ? 2 : 1).compactMap { $0 as? String }
                    for n in names where targets[n] != nil { queue.append(n) }
                    seen.formUnion(names)
                }
            }
        }
        return seen
    }

    static func forbidden(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("grdb") || lower.contains("postgres") || lower.hasPrefix("hummingbird") || lower.hasPrefix("nio")
            || lower.hasPrefix("swift-nio") || lower.hasPrefix("identity")
    }

    /// `swift package dump-package` with its own scratch folder, so it never waits on the `.build` lock the
    /// running `swift test` holds (reading the manifest resolves nothing).
    static func dumpPackage() async throws -> [String: Any] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try await run(["swift", "package", "--scratch-path", scratch.path, "dump-package"], in: root)
        #expect(result.status == 0, "\(result.err)")
        return try #require(try JSONSerialization.jsonObject(with: result.out) as? [String: Any])
    }

    @Test func gatehouseEngineReachesNoIdentitySQLOrNIO() async throws {
        let package = try await Self.dumpPackage()
        let products = package["products"] as? [[String: Any]] ?? []
        let product = try #require(products.first { $0["name"] as? String == "GatehouseEngine" })
        #expect(product["targets"] as? [String] == ["GatehouseEngine"])
        let reached = Self.closure(of: "GatehouseEngine", in: package)
        #expect(reached.isSuperset(of: ["PolicyModel", "PolicyCompiler", "PolicyEngine"]))
        #expect(reached.filter(Self.forbidden).isEmpty, "GatehouseEngine reaches \(reached.filter(Self.forbidden).sorted())")
        // The walk stops at other packages' products, so those are an allow-list: Yams and swift-crypto (whose own
        // closure is swift-asn1) and nothing else, until someone looks at what a new one brings in.
        let local = Set((package["targets"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        #expect(reached.subtracting(local) == ["Yams", "Crypto", "swift-crypto"])
        // The walk sees what is there: the server-side facade does reach Identity and GRDB.
        let facade = Self.closure(of: "Gatehouse", in: package)
        #expect(facade.contains("Identity") && facade.contains("GRDB"))
        #expect(Self.closure(of: "PolicyServer", in: package).contains("Hummingbird"))
    }

    /// The server is thin: the policy-test runner and the matrix page reach it from PolicyCLI (`PolicyChecks`), so
    /// neither PolicyVerification nor anything only it brings is linked into PolicyServer.
    @Test func policyServerReachesNoPolicyVerification() async throws {
        let package = try await Self.dumpPackage()
        let server = Self.closure(of: "PolicyServer", in: package)
        #expect(server.contains("PolicyCompiler") && server.contains("Gatehouse"))
        #expect(!server.contains("PolicyVerification"))
        #expect(Self.closure(of: "PolicyCLI", in: package).contains("PolicyVerification"))
    }

    @Test func gatehouseClientReachesNoIdentitySQLOrNIO() async throws {
        let package = try await Self.dumpPackage()
        let products = package["products"] as? [[String: Any]] ?? []
        let product = try #require(products.first { $0["name"] as? String == "GatehouseClient" })
        #expect(product["targets"] as? [String] == ["GatehouseClient"])
        let reached = Self.closure(of: "GatehouseClient", in: package)
        #expect(reached.contains("PolicyModel"))
        #expect(reached.filter(Self.forbidden).isEmpty, "GatehouseClient reaches \(reached.filter(Self.forbidden).sorted())")
        // Other packages, an allow-list: the generated code's runtime and URLSession transport, HTTP types, and
        // swift-crypto for P-256 device keys where CryptoKit is missing (Linux).
        let local = Set((package["targets"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        #expect(
            reached.subtracting(local) == [
                "OpenAPIRuntime", "swift-openapi-runtime", "OpenAPIURLSession", "swift-openapi-urlsession", "HTTPTypes", "swift-http-types",
                "Crypto", "swift-crypto",
                // GatehouseEngine, for `decideLocally` from a signed bundle (issue 28): the compiler reads YAML.
                "Yams",
            ])
        #expect(reached.contains("GatehouseEngine") && reached.contains("PolicyBundle"), "the client decides locally with the engine")
    }

    /// The transport's own library target, read from its checkout's manifest: Foundation's URLSession, the runtime,
    /// HTTP types and a deque, and no NIO (its package names swift-nio for its tests only).
    @Test func theURLSessionTransportLinksNoNIO() async throws {
        let checkout = root.appendingPathComponent(".build/checkouts/swift-openapi-urlsession")
        try #require(FileManager.default.fileExists(atPath: checkout.path), "resolve the package first")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try await run(["swift", "package", "--scratch-path", scratch.path, "dump-package"], in: checkout)
        #expect(result.status == 0, "\(result.err)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: result.out) as? [String: Any])
        let reached = Self.closure(of: "OpenAPIURLSession", in: manifest)
        #expect(reached.filter(Self.forbidden).isEmpty, "OpenAPIURLSession reaches \(reached.filter(Self.forbidden).sorted())")
        #expect(reached == ["OpenAPIURLSession", "DequeModule", "swift-collections", "OpenAPIRuntime", "swift-openapi-runtime", "HTTPTypes", "swift-http-types"])
    }

    // MARK: Platforms and the Apple workflow

    @Test func packageDeclaresTheApplePlatforms() async throws {
        let platforms = try await Self.dumpPackage()["platforms"] as? [[String: Any]] ?? []
        let declared = Dictionary(uniqueKeysWithValues: platforms.map { ($0["platformName"] as? String ?? "", $0["version"] as? String ?? "") })
        #expect(declared == ["ios": "18.0", "macos": "15.0"])
    }

    /// .github/workflows/apple.yml cannot run here; its structure is checked as GitHub reads it: triggers, a job on
    /// a macOS runner, steps that each `run` or `uses`, and the three commands the issue asks for.
    @Test func appleWorkflowIsAWellFormedMacOSWorkflow() throws {
        let text = try String(contentsOf: root.appendingPathComponent(".github/workflows/apple.yml"), encoding: .utf8)
        let workflow = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(Set(workflow.keys).isSubset(of: ["name", "on", "permissions", "jobs", "env", "concurrency", "defaults", "run-name"]))
        // YAML 1.1 readers turn a bare `on` into true; Yams (YAML 1.2) keeps the string.
        let on = try #require(workflow["on"] as? [String: Any])
        #expect(on["push"] != nil || on["pull_request"] != nil)
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        #expect(!jobs.isEmpty)
        var runs: [String] = []
        for (name, value) in jobs {
            let job = try #require(value as? [String: Any], "job \(name)")
            let runner = try #require(job["runs-on"] as? String, "job \(name) needs runs-on")
            #expect(runner.hasPrefix("macos-"), "job \(name) runs on \(runner)")
            let steps = try #require(job["steps"] as? [[String: Any]], "job \(name) needs steps")
            #expect(!steps.isEmpty)
            for step in steps {
                #expect((step["run"] is String) != (step["uses"] is String), "a step runs a command or uses an action: \(step)")
                #expect(Set(step.keys).isSubset(of: ["name", "run", "uses", "with", "env", "if", "id", "shell", "working-directory", "timeout-minutes", "continue-on-error"]))
                if let command = step["run"] as? String { runs.append(command) }
            }
        }
        #expect(runs.contains("swift build"))
        #expect(runs.contains("swift test --filter 'PolicyEngineTests|PolicyCompilerTests|PolicyModelTests'"))
        #expect(runs.contains("xcodebuild -scheme GatehouseEngine -destination 'generic/platform=iOS Simulator' build"))
        #expect(runs.contains("xcodebuild -scheme GatehouseClient -destination 'generic/platform=iOS Simulator' build"))
        // The filtered suites exist, so the filter runs tests rather than none.
        for suite in ["PolicyEngineTests", "PolicyCompilerTests", "PolicyModelTests"] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("Tests/\(suite)").path))
        }
    }
}
