import Foundation
@testable import GatehouseClient
import GatehouseEngine
import Testing
import GatehouseTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The device's policy: the client refreshes the signed bundle from a live `policy serve --bundle-key` with
/// If-None-Match, keeps it on disk, launches from it offline, and decides every matrix cell as the server does.
@Suite(.serialized, .startsServers) struct PolicyBundleClientTests {
    static func keyFile(in dir: URL) throws -> (path: String, key: BundleSigningKey) {
        let key = BundleSigningKey()
        let file = dir.appendingPathComponent("bundle.key")
        try key.fileText.write(to: file, atomically: true, encoding: .utf8)
        return (file.path, key)
    }

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-client-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func refreshesWithIfNoneMatchAndLaunchesOfflineFromTheCachedBundle() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (keyPath, key) = try Self.keyFile(in: dir)
        let cache = dir.appendingPathComponent("cache", isDirectory: true)
        let request = Request(subject: Subject(id: "u1", tier: "free"), action: "ai_suggestions", resource: Resource(type: "app"))
        var serverHash = ""
        try await withServer("research-crawler", arguments: ["--bundle-key", keyPath]) { server in
            let store = PolicyBundleStore(directory: cache, trustedKeys: [key.publicKey])
            let client = GatehouseClient(serverURL: server.url, policyBundles: store)
            #expect(client.decideLocally(request) == nil)
            guard case .updated(let manifest) = try await client.refreshPolicyBundle() else {
                Issue.record("the first refresh did not install a bundle")
                return
            }
            serverHash = manifest.policyHash
            // The same bundle again: the server answers 304 to the ETag the client derives from the bytes it holds.
            #expect(try await client.refreshPolicyBundle() == .unchanged)
            // A fresh client over the same cache (a relaunch) revalidates with the stored bundle's ETag.
            let relaunched = GatehouseClient(serverURL: server.url, policyBundles: PolicyBundleStore(directory: cache, trustedKeys: [key.publicKey]))
            #expect(try await relaunched.refreshPolicyBundle() == .unchanged)
            // A store pinning another key refuses what the server serves, and keeps deciding from nothing.
            let wrong = GatehouseClient(
                serverURL: server.url, policyBundles: PolicyBundleStore(directory: dir.appendingPathComponent("other"), trustedKeys: [BundleSigningKey().publicKey]))
            await #expect(throws: GatehouseClientError.self) { try await wrong.refreshPolicyBundle() }
            #expect(wrong.decideLocally(request) == nil)
        }
        // The server is gone: a new launch decides from the cached bundle, before and without any network.
        let offline = GatehouseClient(
            serverURL: URL(string: "http://127.0.0.1:9")!, policyBundles: PolicyBundleStore(directory: cache, trustedKeys: [key.publicKey]))
        let local = try #require(offline.decideLocally(request))
        #expect(local.policyHash == serverHash)
        let folder = try Engine(directory: packageRoot.appendingPathComponent("policies/research-crawler").path)
        #expect(local.decision == folder.decide(request))
        // Refreshing offline fails and keeps the bundle.
        await #expect(throws: GatehouseClientError.self) { try await offline.refreshPolicyBundle() }
        #expect(offline.decideLocally(request)?.policyHash == serverHash)
    }

    /// Every cell of `policy matrix --format json` of every shipped set, decided by the server over HTTP and by the
    /// device from the bundle the server served: the same decision, named by the same policy version.
    @Test func theDeviceDecidesEveryMatrixCellAsTheServerDoes() async throws {
        let sets = PolicyCompiler.policySets(under: packageRoot.appendingPathComponent("policies").path).map { URL(fileURLWithPath: $0).lastPathComponent }
        #expect(sets.count >= 3)
        for set in sets {
            let dir = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: dir) }
            let (keyPath, key) = try Self.keyFile(in: dir)
            let data = Data(
                try await Program(LiveServer.binary("policy"), ["matrix", packageRoot.appendingPathComponent("policies/\(set)").path, "--format", "json"])
                    .run().standardOutput.utf8)
            let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let cells = ((document["tables"] as? [[String: Any]]) ?? []).flatMap { ($0["cells"] as? [[String: Any]]) ?? [] }
            #expect(!cells.isEmpty)
            try await withServer(set, arguments: ["--bundle-key", keyPath, "--trust-caller-subjects"]) { server in
                let client = GatehouseClient(serverURL: server.url, policyBundles: PolicyBundleStore(directory: dir.appendingPathComponent("cache"), trustedKeys: [key.publicKey]))
                try await client.refreshPolicyBundle()
                var compared = 0
                for cell in cells {
                    let body = try JSONSerialization.data(withJSONObject: try #require(cell["request"]))
                    var post = URLRequest(url: server.url.appendingPathComponent("v1/decide"))
                    post.httpMethod = "POST"
                    post.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    post.httpBody = body
                    let (answer, response) = try await URLSession.shared.data(for: post)
                    let http = try #require(response as? HTTPURLResponse)
                    #expect(http.statusCode == 200, "\(set): \(String(decoding: answer, as: UTF8.self))")
                    let remote = try JSONDecoder().decode(Decision.self, from: answer)
                    let local = try #require(client.decideLocally(try JSONDecoder().decode(Request.self, from: body)))
                    #expect(local.decision == remote, "\(set): \(String(decoding: body, as: UTF8.self))")
                    #expect(local.policyHash == http.value(forHTTPHeaderField: "Gatehouse-Policy"))
                    compared += 1
                }
                #expect(compared == cells.count)
            }
        }
    }
}
