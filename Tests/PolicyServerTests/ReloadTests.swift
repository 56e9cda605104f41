import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

@Suite(.startsServers) struct ReloadTests {
    static let freeAI = #"{"subject": {"id": "u1", "tier": "free"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#

    @Test func aBrokenVersionIsRefusedAndTheLastGoodKeepsServing() async throws {
        let t = try TestServer()
        let good = t.server.reloader.active.hash
        let original = try t.read("tiers.yaml")
        try t.write("tiers.yaml", "tiers: [unclosed\n")
        guard case .refused(let refused) = await t.server.reloader.reload() else {
            Issue.record("a broken set was not refused")
            return
        }
        #expect(refused.diagnostics.contains { $0.contains("tiers.yaml") })
        #expect(t.server.reloader.active.hash == good)
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.gatehousePolicy] == good)
            }
            try await client.execute(uri: "/v1/policy", method: .get) { r in
                let last = try #require(r.object["lastRefused"] as? [String: Any])
                #expect((last["diagnostics"] as? [String])?.isEmpty == false)
            }
        }
        // A good edit is installed, and the header names it.
        try t.write("tiers.yaml", original.replacingOccurrences(of: "AI Suggestions", with: "AI Hints"))
        guard case .installed(let version) = await t.server.reloader.reload() else {
            Issue.record("a good edit was not installed")
            return
        }
        #expect(version.hash != good)
        #expect(t.server.service.policy.contentHash == version.hash)
        #expect(await t.server.reloader.reload() == .unchanged(version))
        // The refusal described a folder that is good again: /v1/policy no longer shows it.
        #expect(t.server.reloader.lastRefused == nil)
    }

    @Test func aRefusalKeepsItsHelpLineAndARevertClearsIt() async throws {
        let t = try TestServer()
        let original = try t.read("tiers.yaml")
        try t.write("tiers.yaml", original.replacingOccurrences(of: "tiers: [pro, academic, team]", with: "tiers: [pro, academik, team]"))
        guard case .refused(let refused) = await t.server.reloader.reload() else {
            Issue.record("a set naming an unknown tier was not refused")
            return
        }
        #expect(refused.diagnostics.contains { $0.contains("unknown tier 'academik'") && $0.contains("help: did you mean 'academic'?") }, "\(refused.diagnostics)")
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/policy", method: .get) { r in
                let last = try #require(r.object["lastRefused"] as? [String: Any])
                #expect((last["diagnostics"] as? [String])?.contains { $0.contains("did you mean 'academic'?") } == true)
            }
        }
        // Put back as it was: the same version as the one serving, so nothing is installed, and the refusal goes.
        try t.write("tiers.yaml", original)
        #expect(await t.server.reloader.reload() == .unchanged(t.server.reloader.active))
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/policy", method: .get) { r in
                #expect(r.object["lastRefused"] == nil)
            }
        }
    }

    @Test func strictReloadAlsoRefusesFailingPolicyTests() async throws {
        let edit = { (t: TestServer) throws in
            let tests = try t.read("tests.yaml")
            try t.write("tests.yaml", tests.replacingOccurrences(of: "expect: {decision: allow, reason: allowed}", with: "expect: {decision: deny}"))
        }
        let lax = try TestServer()
        try edit(lax)
        guard case .installed = await lax.server.reloader.reload() else {
            Issue.record("failing policy tests blocked a non-strict reload")
            return
        }
        let strict = try TestServer { $0.strictReload = true }
        try edit(strict)
        guard case .refused(let refused) = await strict.server.reloader.reload() else {
            Issue.record("strict reload installed a set whose tests fail")
            return
        }
        #expect(refused.diagnostics.contains { $0.contains("policy test") })
    }

    @Test func theWatcherReloadsOnceTheFolderSettles() async throws {
        let t = try TestServer {
            $0.watchInterval = .milliseconds(20)
            $0.settleTime = .milliseconds(60)
        }
        let good = t.server.reloader.active.hash
        let watcher = PolicyWatcher(t.server, reloadOnHangup: false)
        let task = Task { try await watcher.run() }
        defer { task.cancel() }
        let original = try t.read("tiers.yaml")
        try t.write("tiers.yaml", original.replacingOccurrences(of: "AI Suggestions", with: "AI Ideas"))
        // Bounded: at most 10 s for the change to be seen.
        for _ in 0..<500 where t.server.reloader.active.hash == good {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(t.server.reloader.active.hash != good)
    }

    /// Requests flow while a broken version and then a good one are swapped in: every answer is a 200 from
    /// one of the two good versions, never an error and never the broken one.
    @Test func reloadUnderLoadServesOnlyGoodVersions() async throws {
        let t = try TestServer()
        let first = t.server.reloader.active.hash
        let original = try t.read("tiers.yaml")
        let seen = try await t.app.test(.router) { client in
            try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var hashes: [String] = []
                        for _ in 0..<150 {
                            try await client.execute(uri: "/v1/decide", method: .post, body: body(Self.freeAI)) { r in
                                #expect(r.status == .ok)
                                #expect(r.object["reason"] as? String == "requires_upgrade")
                                hashes.append(r.headers[.gatehousePolicy] ?? "none")
                            }
                        }
                        return hashes
                    }
                }
                group.addTask {
                    var installed: [String] = []
                    for round in 0..<5 {
                        try t.write("tiers.yaml", "tiers: {broken: [\n")
                        await t.server.reloader.reload()
                        try t.write("tiers.yaml", original.replacingOccurrences(of: "AI Suggestions", with: "AI Round \(round)"))
                        if case .installed(let v) = await t.server.reloader.reload() { installed.append("installed:" + v.hash) }
                    }
                    return installed
                }
                var all: [String] = []
                for try await part in group { all += part }
                return all
            }
        }
        let installed = seen.filter { $0.hasPrefix("installed:") }.map { String($0.dropFirst(10)) }
        let answers = seen.filter { !$0.hasPrefix("installed:") }
        #expect(installed.count == 5)
        #expect(answers.count == 600)
        let good = Set([first] + installed)
        #expect(answers.allSatisfy { good.contains($0) })
        // Each round ends on a good version, which clears the round's refusal.
        #expect(t.server.reloader.lastRefused == nil)
    }
}

@Suite(.startsServers) struct LiveServerTests {
    @Test func onALoopbackPort() async throws {
        let t = try TestServer()
        try await t.app.test(.live) { client in
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
            try await client.execute(uri: "/v1/decide", method: .post, body: body(ReloadTests.freeAI)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.gatehousePolicy] == t.server.reloader.active.hash)
            }
        }
    }
}
