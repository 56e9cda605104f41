import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyModel
import PolicyServer
import Testing
import GatehouseTestSupport

@Suite(.startsServers) struct DecisionRouteTests {
    static let freeAI = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let proAI = #"{"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#

    @Test func decideAnswersTheContractAndNamesThePolicyVersion() async throws {
        let t = try TestServer()
        let hash = t.server.reloader.active.hash
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "application/json")
                #expect(r.headers[.gatehousePolicy] == hash)
                #expect(r.object["decision"] as? String == "deny")
                #expect(r.object["reason"] as? String == "requires_upgrade")
                #expect(r.object["upgradeTo"] as? String == "pro")
            }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.proAI)) { r in
                #expect(r.object["decision"] as? String == "allow")
            }
        }
    }

    @Test func badBodiesAreProblemsNamingTheField() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide", method: .post, body: body("{\"action\": ")) { r in
                #expect(r.status == .badRequest)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.object["code"] as? String == "invalid_json")
                #expect(r.object["status"] as? Int == 400)
                #expect(r.object["offset"] as? Int == 11)
            }
            let duplicate = #"{"action": "a", "action": "b", "resource": {"type": "app"}}"#
            try await client.execute(uri: "/v1/decide", method: .post, body: body(duplicate)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["code"] as? String == "invalid_json")
                #expect(r.object["kind"] as? String == "duplicate_key")
                #expect(r.object["offset"] is Int)
            }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(#"{"action": "x", "resource": {"type": "app"}, "extra": 1}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["code"] as? String == "invalid_request")
                #expect(r.object["field"] as? String == "extra")
            }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(#"{"action": "x", "resource": {"type": 3}}"#)) { r in
                #expect(r.object["field"] as? String == "resource.type")
            }
            try await client.execute(uri: "/v1/nothing", method: .get) { r in
                #expect(r.status == .notFound)
                #expect(r.object["code"] as? String == "not_found")
            }
            try await client.execute(uri: "/v1/decide", method: .get) { r in
                #expect(r.status == .methodNotAllowed)
                #expect(r.headers[.allow] == "POST")
                #expect(r.object["code"] as? String == "method_not_allowed")
            }
            try await client.execute(uri: "/v1/spaces/abc/codes", method: .delete) { r in
                #expect(r.status == .methodNotAllowed)
            }
        }
    }

    @Test func aBatchIsAnsweredInOrderAndABadItemFailsAlone() async throws {
        let t = try TestServer()
        let batch = #"{"requests": [\#(Self.freeAI), {"action": 5}, \#(Self.proAI)]}"#
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide/batch", method: .post, body: body(batch)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.gatehousePolicy] == t.server.reloader.active.hash)
                let decisions = try #require(r.object["decisions"] as? [[String: Any]])
                try #require(decisions.count == 3)
                #expect(decisions[0]["reason"] as? String == "requires_upgrade")
                let error = try #require(decisions[1]["error"] as? [String: Any])
                #expect(error["field"] as? String == "requests[1].action")
                // The shape `policy decide --jsonl` writes for a bad line (DecisionWriter.appendErrorItem), less its line.
                #expect(Set(error.keys) == ["code", "field", "kind", "detail", "offset"])
                #expect(error["code"] as? String == "invalid_request")
                #expect(decisions[2]["decision"] as? String == "allow")
            }
            try await client.execute(uri: "/v1/decide/batch", method: .post, body: body(#"{"requests": {}}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "requests")
            }
        }
    }

    /// Batch and check answers written by `DecisionWriter` are byte for byte what the `JSONText` tree of the
    /// same answers renders (how they were built before).
    @Test func batchAndCheckAnswersAreTheTreesBytes() {
        let full = Decision(
            effect: .deny, reason: .limitExceeded, message: "You've reached \"50\" sources.\nUpgrade to Pro — ünïcode\u{1}", limit: 50, used: 50,
            remaining: 0, upgradeTo: "pro", policy: SourceLocation(file: "policies/a b/tiers.yaml", line: 14, column: 5))
        let bare = Decision(effect: .allow, reason: .allowed)
        let errors = [
            RequestError(field: "requests[1].action", "expected a string, found int", kind: .wrongType, offset: 40),
            RequestError(field: "", "invalid JSON: \"x\"", kind: .syntax, offset: 3),
        ]
        func tree(_ error: RequestError) -> JSONText {
            let problem = Problem(error)
            var fields: [JSONText.Field] = [.init("code", .string(problem.code.rawValue))]
            if let field = problem.field, !field.isEmpty { fields.append(.init("field", .string(field))) }
            if let kind = problem.kind { fields.append(.init("kind", .string(kind))) }
            if let detail = problem.detail { fields.append(.init("detail", .string(detail))) }
            if let offset = problem.offset { fields.append(.init("offset", .int(offset))) }
            return .object([.init("error", .object(fields))])
        }
        let answers: [Result<Decision, RequestError>] = [.success(full), .failure(errors[0]), .success(bare), .failure(errors[1])]
        let batchTree = JSONText.object([
            .init("decisions", .array(answers.map { if case .success(let d) = $0 { d.json } else if case .failure(let e) = $0 { tree(e) } else { .null } }))
        ])
        #expect(String(decoding: DecisionBodies.batchAnswer(answers), as: UTF8.self) == batchTree.rendered())
        #expect(String(decoding: DecisionBodies.batchAnswer([]), as: UTF8.self) == JSONText.object([.init("decisions", .array([]))]).rendered())
        let checks: [(action: String, decision: Decision)] = [("add\"source", full), ("view", bare)]
        let checkTree = JSONText.object([.init("decisions", .object(checks.map { .init($0.action, $0.decision.json) }))])
        #expect(String(decoding: DecisionBodies.checkAnswer(checks), as: UTF8.self) == checkTree.rendered())
    }

    /// A batch body of another spelling than `{"requests":[...]}` is read by the same byte reader: errors carry offsets.
    @Test func anyBatchEnvelopeGetsOffsets() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let other = #"{ "\u0072equests" : [\#(Self.freeAI)] , "requests2": 1}"#
            try await client.execute(uri: "/v1/decide/batch", method: .post, body: body(other)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["code"] as? String == "invalid_request")
                #expect(r.object["kind"] as? String == "unknown_field")
                #expect(r.object["field"] as? String == "requests2")
                #expect(r.object["offset"] as? Int == other.utf8.count - 15)
            }
            let check = #"{"resource": {"type": "app"}, "actions": ["a"], "context": {"now": "yesterday"}}"#
            try await client.execute(uri: "/v1/check", method: .post, body: body(check)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["kind"] as? String == "invalid_timestamp")
                #expect(r.object["field"] as? String == "context.now")
                #expect(r.object["offset"] as? Int == 67)
            }
        }
    }

    @Test func checkAnswersEveryActionForOneSubject() async throws {
        let t = try TestServer()
        let check = #"{"subject": {"id": "u1", "tier": "academic"}, "resource": {"type": "app"}, "actions": ["advanced_export", "collaboration"]}"#
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/check", method: .post, body: body(check)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.gatehousePolicy] != nil)
                let decisions = try #require(r.object["decisions"] as? [String: [String: Any]])
                #expect(decisions["advanced_export"]?["decision"] as? String == "allow")
                #expect(decisions["collaboration"]?["reason"] as? String == "requires_upgrade")
            }
            let repeated = #"{"resource": {"type": "app"}, "actions": ["a", "a"]}"#
            try await client.execute(uri: "/v1/check", method: .post, body: body(repeated)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "actions[1]")
            }
        }
    }

    @Test func explainAddsTheTrace() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/explain", method: .post, body: body(Self.freeAI)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.gatehousePolicy] != nil)
                #expect(r.object["reason"] as? String == "requires_upgrade")
                #expect((r.object["trace"] as? [Any])?.isEmpty == false)
            }
        }
    }

    @Test func aBodyOverTheLimitIs413() async throws {
        let t = try TestServer { $0.bodyLimit = 64 }
        try await t.app.test(.router) { client in
            let big = #"{"action": "x", "resource": {"type": "app", "attributes": {"pad": "\#(String(repeating: "x", count: 500))"}}}"#
            try await client.execute(uri: "/v1/decide", method: .post, body: body(big)) { r in
                #expect(r.status == .contentTooLarge)
                #expect(r.object["code"] as? String == "body_too_large")
            }
        }
    }

    @Test func operationsRoutes() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
            try await client.execute(uri: "/readyz", method: .get) { r in #expect(r.status == .ok) }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { _ in }
            try await client.execute(uri: "/v1/policy", method: .get) { r in
                let active = try #require(r.object["active"] as? [String: Any])
                #expect(active["hash"] as? String == t.server.reloader.active.hash)
                #expect((active["files"] as? [String])?.contains { $0.hasSuffix("tiers.yaml") } == true)
                #expect(r.object["lastRefused"] == nil)
            }
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.text.contains(#"gatehouse_decisions_total{reason="requires_upgrade"} 1"#))
            }
        }
    }
}
