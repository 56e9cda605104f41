import Foundation
@testable import GatehouseClient
import GatehouseEngine
import Synchronization
import Testing
import GatehouseTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `startPolicyBundleUpdates()` against a live `policy serve --bundle-key` (on Linux: the data-task delegate, not
/// `bytes(for:)`): several devices hear a reload over the event stream and decide with the new version; none installs
/// a refused version or an older revision; without a stream they poll; they stop when asked.
@Suite(.serialized, .startsServers) struct PolicyBundleUpdatesTests {
    /// The revisions one device reported on `policyRevisions()`.
    final class Revisions: Sendable {
        let seen = Mutex<[UInt64]>([])
        var all: [UInt64] { seen.withLock { $0 } }
    }

    static let request = Request(subject: Subject(id: "u1", tier: "free"), action: "ai_suggestions", resource: Resource(type: "app"))
    static let fast = PolicyBundleUpdateBackoff(base: .milliseconds(100), maximum: .seconds(1))

    /// The active policy hash `GET /v1/policy` reports.
    static func activeHash(_ server: LiveServer) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: server.url.appendingPathComponent("v1/policy"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return ((object?["active"] as? [String: Any])?["hash"] as? String) ?? ""
    }

    /// Waits (bounded) until `condition` holds; false when it never did.
    static func eventually(_ seconds: Int = 60, _ condition: () async throws -> Bool) async rethrows -> Bool {
        for _ in 0..<(seconds * 20) {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test func devicesHearAReloadAndDecideWithTheNewVersionButNeverARefusedOrOlderOne() async throws {
        let dir = try PolicyBundleClientTests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (keyPath, key) = try PolicyBundleClientTests.keyFile(in: dir)
        try await withServer("research-crawler", arguments: ["--bundle-key", keyPath]) { server in
            let first = try await Self.activeHash(server)
            var clients: [(GatehouseClient, Revisions, Task<Void, Never>)] = []
            for n in 0..<4 {
                let store = PolicyBundleStore(directory: dir.appendingPathComponent("device-\(n)"), trustedKeys: [key.publicKey])
                let client = GatehouseClient(serverURL: server.url, policyBundles: store)
                let revisions = Revisions()
                let feed = client.policyRevisions()
                let listener = Task {
                    for await revision in feed { revisions.seen.withLock { $0.append(revision) } }
                }
                await client.startPolicyBundleUpdates(pollingInterval: .seconds(3600), backoff: Self.fast)
                clients.append((client, revisions, listener))
            }
            // On connect each device is told the version deciding now, and installs it.
            for (client, _, _) in clients {
                #expect(await Self.eventually { client.decideLocally(Self.request)?.policyHash == first })
            }
            // A refused version is never announced; the next good one is, to every device.
            let tiers = server.dir.appendingPathComponent("research-crawler/tiers.yaml")
            let original = try String(contentsOf: tiers, encoding: .utf8)
            try Data("tiers: [unclosed\n".utf8).write(to: tiers)
            #expect(await Self.eventually { (try? await server.counter(#"gatehouse_policy_reloads_total{outcome="refused"}"#)) ?? 0 >= 1 })
            try Data(original.replacingOccurrences(of: "AI Suggestions", with: "AI Ideas").utf8).write(to: tiers)
            var second = first
            #expect(await Self.eventually { second = (try? await Self.activeHash(server)) ?? first; return second != first })
            for (client, _, _) in clients {
                #expect(await Self.eventually { client.decideLocally(Self.request)?.policyHash == second })
            }
            for (client, revisions, listener) in clients {
                // The install is reported just after the swap that decideLocally already answers from.
                #expect(await Self.eventually { revisions.all.count >= 2 })
                await client.stopPolicyBundleUpdates()
                listener.cancel()
                let seen = revisions.all
                // Two installs, in order: the first version, then the second; nothing in between, nothing older.
                #expect(seen.count == 2, "\(seen)")
                #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen)")
            }
        }
    }

    /// Bundles of the shipped set at `revision`, signed with `key`.
    static func bundle(_ key: BundleSigningKey, revision: UInt64, edit: String? = nil) throws -> [UInt8] {
        var files: [String: [UInt8]] = [:]
        let folder = packageRoot.appendingPathComponent("policies/research-crawler")
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".yaml") {
            var text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            if let edit, name == "tiers.yaml" { text = text.replacingOccurrences(of: "AI Suggestions", with: edit) }
            files[name] = Array(text.utf8)
        }
        return try PolicyBundle.build(name: "research-crawler", files: files, key: key, createdAt: Date(), revision: revision).bytes
    }

    /// The stream is cut after each event: the client reconnects (jittered backoff) with the last ETag as
    /// `Last-Event-ID`, installs the newer bundle announced after a reconnect, and refuses an older one announced after
    /// the next (downgrade refusal across reconnects).
    @Test func aCutStreamIsResumedWithTheLastETagAndNeverGoesBack() async throws {
        let dir = try PolicyBundleClientTests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = BundleSigningKey()
        let v10 = try Self.bundle(key, revision: 10)
        let v20 = try Self.bundle(key, revision: 20, edit: "AI Ideas")
        let v15 = try Self.bundle(key, revision: 15, edit: "AI Older")
        let stub = try BundleStreamStub(bundle: v10, mode: .oneEventThenCut)
        defer { stub.stop() }
        let store = PolicyBundleStore(directory: dir.appendingPathComponent("device"), trustedKeys: [key.publicKey])
        let client = GatehouseClient(serverURL: stub.url, policyBundles: store)
        await client.startPolicyBundleUpdates(pollingInterval: .seconds(3600), backoff: Self.fast)
        #expect(await Self.eventually { client.decideLocally(Self.request)?.revision == 10 })
        // Reconnected after the cut, naming what it saw.
        #expect(await Self.eventually { stub.state.withLock { $0.lastEventIDs.contains(PolicyBundle.entityTag(of: v10)) } })
        stub.state.withLock { $0.bundle = v20 }
        #expect(await Self.eventually { client.decideLocally(Self.request)?.revision == 20 })
        // A replica behind the others announces an older revision: never installed, however often it is heard.
        stub.state.withLock { $0.bundle = v15 }
        let connects = stub.state.withLock { $0.streamRequests }
        #expect(await Self.eventually { stub.state.withLock { $0.streamRequests } >= connects + 3 })
        #expect(client.decideLocally(Self.request)?.revision == 20)
        await client.stopPolicyBundleUpdates()
    }

    /// A server that refuses the stream (404: no such route, no key): the client polls `GET /v1/bundle` instead, installs
    /// from it, keeps trying the stream at each poll, and stops both when asked.
    @Test func aRefusedStreamFallsBackToPollingUntilStopped() async throws {
        let dir = try PolicyBundleClientTests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = BundleSigningKey()
        let stub = try BundleStreamStub(bundle: try Self.bundle(key, revision: 10), mode: .refused)
        defer { stub.stop() }
        let client = GatehouseClient(
            serverURL: stub.url, policyBundles: PolicyBundleStore(directory: dir.appendingPathComponent("device"), trustedKeys: [key.publicKey]))
        await client.startPolicyBundleUpdates(pollingInterval: .milliseconds(200), backoff: Self.fast)
        #expect(await Self.eventually { client.decideLocally(Self.request)?.revision == 10 })
        let v11 = try Self.bundle(key, revision: 11, edit: "AI Ideas")
        stub.state.withLock { $0.bundle = v11 }
        #expect(await Self.eventually { client.decideLocally(Self.request)?.revision == 11 })
        #expect(stub.state.withLock { $0.streamRequests } >= 2)
        await client.stopPolicyBundleUpdates()
        // Stopped: no request after the one that may have been under way.
        try? await Task.sleep(for: .milliseconds(300))
        let settled = stub.state.withLock { $0.streamRequests + $0.bundleRequests }
        try? await Task.sleep(for: .milliseconds(600))
        #expect(stub.state.withLock { $0.streamRequests + $0.bundleRequests } == settled)
    }
}
