import Crypto
import PolicyModel
import Foundation
@testable import GatehouseClient
import GatehouseTestSupport
import Testing
import Yams

/// The generated layer against the spec it was generated from; the server's side of the same spec is
/// PolicyServerTests.OpenAPIRouteTests, so the spec, the routes and the client agree on every operation.
@Suite struct GeneratedClientTests {
    static let spec = packageRoot.appendingPathComponent("docs/openapi.yaml")
    static let generated = packageRoot.appendingPathComponent("Sources/GatehouseClient/Generated")

    /// Every operationId of docs/openapi.yaml, from the spec's own text.
    static func specOperations() throws -> Set<String> {
        let text = try String(contentsOf: spec, encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        var ids: Set<String> = []
        for case let item as [String: Any] in paths.values {
            for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
                if let operation = item[method] as? [String: Any], let id = operation["operationId"] as? String { ids.insert(id) }
            }
        }
        return ids
    }

    /// The requirements of the generated `APIProtocol`: one `func <operationId>(_ input: Operations.X.Input)` each.
    static func clientCalls() throws -> Set<String> {
        try generatedAPIRequirements(in: generated)
    }

    @Test func everyOperationOfTheSpecHasAClientCall() throws {
        let operations = try Self.specOperations()
        let calls = try Self.clientCalls()
        #expect(operations.count >= 45)
        #expect(operations == calls, "spec only: \(operations.subtracting(calls).sorted()); client only: \(calls.subtracting(operations).sorted())")
        // The generated client is a value the compiler checks against the protocol, so each call exists as typed.
        let api: any APIProtocol = Client(serverURL: URL(string: "http://127.0.0.1:1")!, transport: NoTransport())
        #expect(api is Client)
    }

    /// The committed code was generated from the spec as it is: scripts/generate-client.sh writes the spec's digest
    /// beside the code. Changed the spec? Run the script and commit what it writes.
    @Test func theGeneratedCodeIsFromTheCurrentSpec() throws {
        let digest = SHA256.hash(data: try Data(contentsOf: Self.spec)).map { String(format: "%02x", $0) }.joined()
        let stamp = try String(contentsOf: Self.generated.appendingPathComponent("openapi.yaml.sha256"), encoding: .utf8)
        #expect(stamp.trimmingCharacters(in: .whitespacesAndNewlines) == digest, "Sources/GatehouseClient/Generated is stale: run scripts/generate-client.sh")
    }

    /// The generator's configuration substitutes PolicyModel's types for the contract's schemas.
    @Test func theContractsSchemasAreThePolicyModelTypes() {
        #expect(Components.Schemas.Request.self == PolicyModel.Request.self)
        #expect(Components.Schemas.Decision.self == PolicyModel.Decision.self)
        #expect(Components.Schemas.TokenPair.self == PolicyModel.TokenPair.self)
        #expect(Components.Schemas.Problem.self == PolicyModel.ProblemDetails.self)
        #expect(Components.Schemas.Explanation.self == DecisionExplanation.self)
    }
}

import HTTPTypes
import OpenAPIRuntime

/// A transport that is never called.
struct NoTransport: ClientTransport {
    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        throw CancellationError()
    }
}
