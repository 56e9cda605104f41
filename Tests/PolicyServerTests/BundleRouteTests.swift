import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyBundle
import PolicyServer
import Testing
import GatehouseTestSupport

/// `GET /v1/bundle`: the active version's signed bundle, its strong ETag and 304, rebuilt at a reload and never
/// from a refused version; 404 problem+json without `--bundle-key`.
@Suite(.startsServers) struct BundleRouteTests {
    static let key = BundleSigningKey()

    func server(_ configure: (inout ServerSettings) -> Void = { _ in }) throws -> TestServer {
        try TestServer {
            $0.bundleKey = Self.key
            configure(&$0)
        }
    }

    @Test func servesTheActiveVersionSignedWithAStrongETagAndAnswers304ToIt() async throws {
        let t = try server()
        try await t.app.test(.router) { client in
            var etag = ""
            try await client.execute(uri: "/v1/bundle", method: .get) { r in
                #expect(r.status == .ok)
                etag = try #require(r.headers[.eTag])
                #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"))
                #expect(r.headers[.cacheControl] == "no-cache")
                let bundle = try PolicyBundle.verify(Array(r.body.readableBytesView), trusting: [Self.key.publicKey])
                #expect(bundle.manifest.policyHash == t.server.reloader.active.hash)
                #expect(r.headers[.gatehousePolicy] == t.server.reloader.active.hash)
            }
            try await client.execute(uri: "/v1/bundle", method: .get, headers: [.ifNoneMatch: etag]) { r in
                #expect(r.status == .notModified)
                #expect(r.body.readableBytes == 0)
                #expect(r.headers[.eTag] == etag)
            }
            try await client.execute(uri: "/v1/bundle", method: .get, headers: [.ifNoneMatch: "\"other\", \(etag)"]) { r in
                #expect(r.status == .notModified)
            }
            try await client.execute(uri: "/v1/bundle", method: .get, headers: [.ifNoneMatch: "\"other\""]) { r in
                #expect(r.status == .ok)
            }
        }
    }

    @Test func withoutAKeyTheRouteIsAProblem404() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/bundle", method: .get) { r in
                #expect(r.status == .notFound)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.object["code"] as? String == "not_found")
            }
        }
    }

    @Test func aReloadGivesANewETagWithinOneWatchIntervalAndARefusedOneKeepsTheOldBundle() async throws {
        let t = try server {
            $0.watchInterval = .milliseconds(20)
            $0.settleTime = .milliseconds(60)
        }
        let first = try #require(t.server.bundles?.current)
        // A refused version: the bundle stays the last good one, byte for byte.
        let original = try t.read("tiers.yaml")
        try t.write("tiers.yaml", "tiers: [unclosed\n")
        guard case .refused = await t.server.reloader.reload() else {
            Issue.record("a broken set was not refused")
            return
        }
        #expect(t.server.bundles?.current?.bytes == first.bytes)
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/bundle", method: .get, headers: [.ifNoneMatch: first.etag]) { r in
                #expect(r.status == .notModified)
            }
        }
        // A good edit seen by the watcher: by the time the new version decides, its bundle is the one served.
        let watcher = PolicyWatcher(t.server, reloadOnHangup: false)
        let task = Task { try await watcher.run() }
        defer { task.cancel() }
        try t.write("tiers.yaml", original.replacingOccurrences(of: "AI Suggestions", with: "AI Ideas"))
        let good = t.server.reloader.active.hash
        for _ in 0..<500 where t.server.reloader.active.hash == good {
            try await Task.sleep(for: .milliseconds(20))
        }
        let active = t.server.reloader.active.hash
        #expect(active != good)
        try await t.app.test(.router) { client in
            try await client.execute(uri: "/v1/bundle", method: .get, headers: [.ifNoneMatch: first.etag]) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.eTag] != first.etag)
                let bundle = try PolicyBundle.verify(Array(r.body.readableBytesView), trusting: [Self.key.publicKey], heldRevision: first.manifest.revision)
                #expect(bundle.manifest.policyHash == active)
                #expect(bundle.manifest.revision > first.manifest.revision)
            }
        }
    }

    @Test func theKeyComesFromItsOptionOrVariableAndIsNeverEchoed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("key")
        try Self.key.fileText.write(to: file, atomically: true, encoding: .utf8)
        var options = ServerSettings.Options()
        options.policies = "policies/mimisupply"
        options.database = dir.appendingPathComponent("db.sqlite").path
        let fromEnv = try ServerSettings.resolve(options, environment: ["GATEHOUSE_BUNDLE_KEY": file.path])
        #expect(fromEnv.bundleKey?.publicKey == Self.key.publicKey)
        options.bundleKey = file.path
        #expect(try ServerSettings.resolve(options, environment: [:]).bundleKey?.publicKey == Self.key.publicKey)
        // Not a key: the error names the option and the file, not what the file holds.
        let notAKey = dir.appendingPathComponent("not-a-key")
        try "secret-looking-text".write(to: notAKey, atomically: true, encoding: .utf8)
        options.bundleKey = notAKey.path
        do {
            _ = try ServerSettings.resolve(options, environment: [:])
            Issue.record("a file that is not a key was accepted")
        } catch {
            #expect(error.description.contains("--bundle-key"))
            #expect(!error.description.contains("secret-looking-text"))
        }
        // A dump of the settings shows the key id, not the key.
        let dump = String(describing: fromEnv.bundleKey!) + String(reflecting: fromEnv)
        #expect(!dump.contains(Self.key.fileText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last!))
    }
}

extension BundleRouteTests {
    /// Two servers (replicas) over the same folder and key serve the same bytes: a device moving between them sees one
    /// ETag and one revision, never a downgrade.
    @Test func replicasOverTheSameFolderServeTheSameBundle() throws {
        let a = try server()
        let b = try TestServer {
            $0.policies = a.policies.path
            $0.bundleKey = Self.key
        }
        let first = try #require(a.server.bundles?.current)
        let second = try #require(b.server.bundles?.current)
        #expect(first.etag == second.etag)
        #expect(first.bytes == second.bytes)
    }
}
