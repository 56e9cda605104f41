import Foundation
import PolicyServer
import Testing
import Yams

/// `docs/openapi.yaml` lists exactly the routes the server registers, method by method.
@Suite struct OpenAPIRouteTests {
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
