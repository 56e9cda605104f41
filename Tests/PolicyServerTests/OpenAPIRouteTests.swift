import Foundation
import Gatehouse
import GatehouseTestSupport
import PolicyModel
import PolicyServer
import Testing
import Yams

/// `docs/openapi.yaml` lists exactly the routes the server registers, method by method.
@Suite(.startsServers) struct OpenAPIRouteTests {
    @Test func theSpecAndTheRouterAgree() throws {
        let t = try TestServer()
        let registered = Set(buildRouterAndTable(t.server).table.routes.map { "\($0.method) \($0.path)" })
        let text = try String(contentsOf: TestServer.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let spec = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(spec["openapi"] as? String == "3.1.0")
        let paths = try #require(spec["paths"] as? [String: Any])
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        var documented: Set<String> = []
        for (path, item) in paths {
            for key in (item as? [String: Any] ?? [:]).keys where methods.contains(key) { documented.insert("\(key.uppercased()) \(path)") }
        }
        #expect(registered.count > 30)
        #expect(registered.subtracting(documented).sorted() == [], "registered but not documented")
        #expect(documented.subtracting(registered).sorted() == [], "documented but not registered")
    }
}

/// The spec as a client generator and a linter read it: operation ids and tags, problems where errors are, the
/// decision's reason as its enum, and the document valid OpenAPI 3.1 by an independent validator.
@Suite(.startsServers) struct OpenAPISpecTests {
    static let path = TestServer.root.appendingPathComponent("docs/openapi.yaml")
    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]

    static func spec() throws -> [String: Any] {
        try #require(try Yams.load(yaml: try String(contentsOf: path, encoding: .utf8)) as? [String: Any])
    }

    static func operations() throws -> [(name: String, operation: [String: Any])] {
        let paths = try #require(try spec()["paths"] as? [String: Any])
        var result: [(String, [String: Any])] = []
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            for (method, operation) in (item as? [String: Any] ?? [:]) where methods.contains(method) {
                result.append(("\(method.uppercased()) \(path)", operation as? [String: Any] ?? [:]))
            }
        }
        return result
    }

    @Test func everyOperationHasAUniqueIdAndATag() throws {
        var ids: [String: String] = [:]
        for (name, operation) in try Self.operations() {
            let id = operation["operationId"] as? String
            #expect(id != nil, "\(name) has no operationId (scripts/openapi-operations.py adds one)")
            if let id {
                #expect(ids[id] == nil, "\(name) and \(ids[id] ?? "") share operationId \(id)")
                ids[id] = name
            }
            #expect((operation["tags"] as? [String])?.isEmpty == false, "\(name) has no tag")
        }
    }

    /// Every 4xx and 5xx answer is a problem document: a description that swallowed the lines after it (an
    /// unterminated quote, as `/readyz`'s 503 once was) leaves the response without its content and fails here.
    @Test func everyErrorResponseIsAProblem() throws {
        for (name, operation) in try Self.operations() {
            for (status, response) in operation["responses"] as? [String: Any] ?? [:] {
                guard let code = Int(status), code >= 400 else { continue }
                let object = response as? [String: Any] ?? [:]
                let description = object["description"] as? String ?? ""
                #expect(!description.contains("\n"), "\(name) \(status): description runs over several lines: \(description)")
                let content = object["content"] as? [String: Any]
                #expect(content?["application/problem+json"] != nil, "\(name) \(status) is not documented as application/problem+json")
            }
        }
    }

    @Test func decisionReasonIsTheEnumAndProblemCarriesKindAndOffset() throws {
        let schemas = try #require((try Self.spec()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let decision = try #require((schemas["Decision"] as? [String: Any])?["properties"] as? [String: Any])
        let reason = try #require(decision["reason"] as? [String: Any])
        #expect(reason["enum"] as? [String] == Reason.allCases.map(\.rawValue))
        let problem = try #require((schemas["Problem"] as? [String: Any])?["properties"] as? [String: Any])
        for field in ["type", "title", "status", "code", "detail", "field", "retryAfter", "kind", "offset", "traceId"] {
            #expect(problem[field] != nil, "Problem does not document \(field)")
        }
    }

    /// The problem codes: `ProblemCode` in the server and the `ProblemCode` schema of the spec list the same codes, and
    /// docs/server.md names each one. Checked to fail on a code added to the enum only.
    @Test func problemCodesAreTheSpecsEnumAndDocumented() throws {
        let schemas = try #require((try Self.spec()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let documented = try #require((schemas["ProblemCode"] as? [String: Any])?["enum"] as? [String])
        let served = ProblemCode.allCases.map(\.rawValue)
        #expect(Set(served).subtracting(documented).sorted() == [], "in ProblemCode but not in docs/openapi.yaml")
        #expect(Set(documented).subtracting(served).sorted() == [], "in docs/openapi.yaml but not in ProblemCode")
        #expect(documented.count == Set(documented).count, "a code listed twice")
        let prose = try String(contentsOf: TestServer.root.appendingPathComponent("docs/server.md"), encoding: .utf8)
        for code in served { #expect(prose.contains("`\(code)`"), "docs/server.md does not name the problem code \(code)") }
        for code in ProblemCode.allCases {
            #expect(code.typeURI == "urn:gatehouse:problem:\(code.rawValue)")
            #expect((400...599).contains(code.status) && !code.title.isEmpty)
        }
    }

    /// The server's own codes and the identity layer's never share a wire form, so a code names one problem.
    @Test func serverAndIdentityCodesAreDistinct() {
        let own = Set(ProblemCode.Server.allCases.map(\.rawValue))
        #expect(own.intersection(IdentityError.Code.allCases.map(\.rawValue)).sorted() == [])
        for code in ProblemCode.allCases { #expect(ProblemCode(rawValue: code.rawValue) == code) }
    }

    static func python() async -> String? { await ExternalTool.interpreter(root: TestServer.root, importing: ["openapi_spec_validator", "yaml"]) }

    @Test(.enabled("needs python with openapi-spec-validator: run .ci/run") {
        await ExternalTool.shouldRun(root: TestServer.root, importing: ["openapi_spec_validator", "yaml"])
    })
    func theSpecIsValidOpenAPI() async throws {
        let python = try #require(await Self.python(), "needs python with openapi-spec-validator and PyYAML (.ci/run installs them in .venv)")
        let (status, text) = try await ExternalTool.run(python, [TestServer.root.appendingPathComponent("Tests/Schemas/validate_openapi.py").path, Self.path.path])
        #expect(status == 0 && text.hasPrefix("ok"), "\(text)")
    }
}
