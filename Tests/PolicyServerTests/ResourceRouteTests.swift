import Foundation
import Gatehouse
import GatehouseRaceSupport
import Hummingbird
import HummingbirdTesting
import PolicyCompiler
import PolicyServer
import Testing
import GatehouseTestSupport

/// `GET /v1/resources` and `POST /v1/plan`: the list through HTTP against `decide`, its refusals as problems naming the
/// field, and pagination while resources are inserted.
@Suite(.startsServers) struct ResourceRouteTests {
    /// Every page of a list through the route, `limit` ids a page.
    static func listAll(_ client: some TestClientProtocol, token: String, type: String, action: String, limit: Int = 7) async throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        for _ in 0..<10_000 {
            let uri = "/v1/resources?type=\(type)&action=\(action)&limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try await client.execute(uri: uri, method: .get, headers: bearer(token)) { r in
                #expect(r.status == .ok, "\(r.text)")
                return r.object
            }
            ids += page["ids"] as? [String] ?? []
            guard let next = page["nextCursor"] as? String else { return ids }
            cursor = next
        }
        throw HarnessError("a list did not end")
    }

    @Test func theRouteListsWhatDecideAllows() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let world = ListDifferential(gate: t.server.service, clock: RaceClock(Date())) { token, type, action in
                try await Self.listAll(client, token: token, type: type, action: action)
            }
            let users = try await world.makeUsers(5)
            var report = ListDifferential.Report()
            report.add(try await world.run(t.server.service.policy, users: users, resourcesPerType: 30, seed: 5))
            for seed in 0..<UInt64(8) {
                var generator = ListPolicyGenerator(seed: 91_000 + seed)
                guard let policy = PolicyCompiler.compile(name: "g", files: [PolicyFileInput(path: "g.yaml", bytes: Array(generator.yaml().utf8))]).policy
                else { continue }
                report.add(try await world.run(policy, users: users, resourcesPerType: 20, seed: 91_000 + seed))
            }
            print("GET /v1/resources vs decide on SQLite: \(report)")
            #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
            #expect(report.allowed > 0 && report.allowed < report.cases)
        }
    }

    @Test func refusalsNameTheField() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let world = ListDifferential(gate: t.server.service, clock: RaceClock(Date()))
            let token = try await world.makeUsers(1)[0].token
            func problem(_ uri: String, token: String? = token, status: HTTPResponse.Status, code: String, field: String?) async throws {
                try await client.execute(uri: uri, method: .get, headers: token.map(bearer) ?? [:]) { r in
                    #expect(r.status == status, "\(uri): \(r.text)")
                    #expect(r.headers[.contentType] == "application/problem+json")
                    #expect(r.object["code"] as? String == code, "\(uri): \(r.text)")
                    if let field { #expect(r.object["field"] as? String == field, "\(uri): \(r.text)") }
                }
            }
            try await problem("/v1/resources?type=project&action=view", token: nil, status: .unauthorized, code: "unauthenticated", field: nil)
            try await problem("/v1/resources?type=project&action=view", token: "gha_garbage", status: .unauthorized, code: "unauthenticated", field: nil)
            try await problem("/v1/resources?type=app&action=view", status: .badRequest, code: "invalid_input", field: "type")
            try await problem("/v1/resources?type=project&action=fly", status: .badRequest, code: "invalid_input", field: "action")
            try await problem("/v1/resources?action=view", status: .badRequest, code: "invalid_request", field: "type")
            try await problem("/v1/resources?type=project&action=view&limit=0", status: .badRequest, code: "invalid_request", field: "limit")
            try await problem("/v1/resources?type=project&action=view&limit=1001", status: .badRequest, code: "invalid_request", field: "limit")
            try await problem("/v1/resources?type=project&action=view&limit=x", status: .badRequest, code: "invalid_request", field: "limit")
            try await problem("/v1/resources?type=project&action=view&sort=id", status: .badRequest, code: "invalid_request", field: "sort")
            try await problem("/v1/resources?type=project&type=space&action=view", status: .badRequest, code: "invalid_request", field: "type")
            try await problem("/v1/resources?type=project&action=view&cursor=bm90IGEgY3Vyc29y", status: .badRequest, code: "invalid_input", field: "cursor")
            // A cursor of another list (same type, another action) is refused.
            for _ in 0..<3 { _ = try await t.server.service.createSpace(accessToken: token, name: "P", type: "project", inviteRole: "editor") }
            let first = try await client.execute(uri: "/v1/resources?type=project&action=view&limit=1", method: .get, headers: bearer(token)) { $0.object }
            let cursor = try #require(first["nextCursor"] as? String)
            try await problem("/v1/resources?type=project&action=edit&cursor=\(cursor)", status: .badRequest, code: "invalid_input", field: "cursor")
        }
    }

    @Test func planAnswersTheContractsJSON() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let world = ListDifferential(gate: t.server.service, clock: RaceClock(Date()))
            let user = try await world.makeUsers(1)[0]
            try await client.execute(uri: "/v1/plan", method: .post, headers: bearer(user.token), body: body(#"{"action": "edit", "resourceType": "project"}"#)) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect(r.headers[.gatehousePolicy] != nil)
                #expect(r.object["plan"] as? String == "conditional")
                #expect(r.text.contains(user.id))
            }
            // A named subject (this test server trusts backends to name one): signed out, so never.
            try await client.execute(uri: "/v1/plan", method: .post, body: body(#"{"action": "edit", "resourceType": "project"}"#)) { r in
                #expect(r.status == .ok, "\(r.text)")
                #expect(r.object["plan"] as? String == "never")
            }
            try await client.execute(uri: "/v1/plan", method: .post, headers: bearer("gha_garbage"), body: body(#"{"action": "edit", "resourceType": "project"}"#)) { r in
                #expect(r.object["plan"] as? String == "never")
                #expect(r.object["reason"] as? String == "unauthenticated")
                #expect(r.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#)
            }
            for (text, field) in [
                (#"{"action": "edit", "resourceType": "rocket"}"#, "resourceType"), (#"{"action": "fly", "resourceType": "project"}"#, "action"),
                (#"{"action": "edit"}"#, "resourceType"), (#"{"action": "edit", "resourceType": "project", "resource": {}}"#, "resource"),
                (#"{"action": "edit", "resourceType": "project", "subject": {"id": "u"}}"#, "subject"),
            ] {
                let headers = field == "subject" ? bearer(user.token) : [:]
                try await client.execute(uri: "/v1/plan", method: .post, headers: headers, body: body(text)) { r in
                    #expect(r.status == .badRequest, "\(text): \(r.text)")
                    #expect(r.object["field"] as? String == field, "\(text): \(r.text)")
                }
            }
        }
    }

    @Test func aNamedSubjectNeedsATrustingServerAndAPlanWithNoSQLFormIsNotListable() async throws {
        let t = try TestServer { $0.trustCallerSubjects = false }
        try await t.app.test(.router) { client in
            try await client.execute(
                uri: "/v1/plan", method: .post, body: body(#"{"subject": {"id": "u-1", "tier": "pro"}, "action": "edit", "resourceType": "project"}"#)
            ) { r in
                #expect(r.status == .forbidden, "\(r.text)")
                #expect(r.object["code"] as? String == "caller_subject_not_trusted")
                #expect(r.object["field"] as? String == "subject")
            }
            // `resource.role` has no SQL form yet: the list says so, naming the condition, rather than guessing.
            let policy = try #require(PolicyCompiler.compile(name: "r", files: [PolicyFileInput(path: "r.yaml", bytes: Array("""
                tiers:
                  free: {name: Free, default: true}
                resources:
                  doc:
                    owner: ownerId
                    roles:
                      viewer: {grants: [view]}
                    actions:
                      view: {}
                rules:
                  - name: by-role
                    effect: allow
                    actions: [view]
                    when: "resource.role == 'viewer'"
                """.utf8))]).policy)
            t.server.service.install(policy)
            let token = try await ListDifferential(gate: t.server.service, clock: RaceClock(Date())).makeUsers(1)[0].token
            try await client.execute(uri: "/v1/resources?type=doc&action=view", method: .get, headers: bearer(token)) { r in
                #expect(r.status == .unprocessableContent, "\(r.text)")
                #expect(r.object["code"] as? String == "not_listable")
                #expect(r.object["field"] as? String == "resource.role == 'viewer'")
            }
        }
    }

    /// Pages of 5 while another task creates projects the user owns: every id stored before the first page is listed
    /// exactly once, and no id twice.
    @Test func pagesListEveryEarlierIdOnceWhileInsertsRun() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let world = ListDifferential(gate: t.server.service, clock: RaceClock(Date()))
            let token = try await world.makeUsers(1)[0].token
            let service = t.server.service
            var before: [String] = []
            for _ in 0..<40 { before.append(try await service.createSpace(accessToken: token, name: "P", type: "project", inviteRole: "editor").resourceId) }
            let inserting = Task {
                var added: [String] = []
                for _ in 0..<40 {
                    added.append(try await service.createSpace(accessToken: token, name: "Q", type: "project", inviteRole: "editor").resourceId)
                    await Task.yield()
                }
                return added
            }
            let listed = try await Self.listAll(client, token: token, type: "project", action: "view", limit: 5)
            let added = try await inserting.value
            #expect(Set(listed).count == listed.count, "an id listed twice")
            let counts = Dictionary(listed.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(before.allSatisfy { counts[$0] == 1 }, "an id stored before the first page was skipped")
            #expect(Set(listed).isSubset(of: Set(before + added)))
            print("paged \(listed.count) ids (\(before.count) before, \(added.count) inserted meanwhile, \(Set(listed).intersection(added).count) of those listed)")
        }
    }
}
