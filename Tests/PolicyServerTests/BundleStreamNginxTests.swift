import Foundation
import PolicyBundle
import Testing
import GatehouseTestSupport

/// The bundle event stream through `examples/deploy/nginx.conf` in front of two replicas over one folder and key:
/// events pass as they are written (not held in nginx's buffer), and an ETag seen from one replica resumes on the
/// other (replicas build identical bundles, so the id is the same on both).
@Suite(.serialized, .startsServers) struct BundleStreamNginxTests {
    /// The ids of the `bundle` events in `text`, in order.
    static func ids(_ text: String) -> [String] {
        // `isNewline`, not "\n": a chunk's "\r\n" is one Character, and the line after a chunk size starts after it.
        text.split(whereSeparator: \.isNewline).compactMap { line in line.hasPrefix("id: ") ? String(line.dropFirst(4)) : nil }
    }

    @Test(.enabled(if: Nginx.shouldRun, Comment(rawValue: Nginx.skipReason)))
    func theStreamPassesNginxUnbufferedAndResumesOnEitherReplica() async throws {
        let keyDir = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keyDir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: keyDir) }
        let keyFile = keyDir.appendingPathComponent("bundle.key")
        try BundleSigningKey().fileText.write(to: keyFile, atomically: true, encoding: .utf8)
        try await Replicas.with(store: .sqlite, arguments: ["--bundle-key", keyFile.path]) { r in
            let nginx = try await Nginx.start(in: r.dir, upstreams: r.bases)
            do {
                let port = try #require(nginx.base.port)
                let stream = try BundleEventsRouteTests.open(port: port)
                let opened = try await onThread { stream.read(until: { Self.ids($0).count >= 1 && $0.contains("\"revision\"") }, within: 60) }
                #expect(opened.contains("HTTP/1.1 200"))
                let first = try #require(Self.ids(opened).first)
                // A save: both replicas reload the folder; the stream's replica tells of it through nginx, while the
                // response is still open (a buffering proxy would hold the bytes until it ended).
                let file = r.policies.appendingPathComponent("space.yaml")
                let text = try String(contentsOf: file, encoding: .utf8)
                try Data((text + "\n# edited for the stream test\n").utf8).write(to: file)
                let next = try await onThread { stream.read(until: { Self.ids($0).contains { $0 != first } }, within: 60) }
                let second = try #require(Self.ids(next).first { $0 != first }, "read: \(next.suffix(600))")
                // Each replica, resumed from the first id, answers with the same second id: resume by ETag works on either.
                for base in r.bases {
                    let resumed = try BundleEventsRouteTests.open(port: try #require(base.port), lastEventID: first)
                    let caught = try await onThread { resumed.read(until: { Self.ids($0).contains(second) }, within: 60) }
                    #expect(Self.ids(caught).contains(second), "\(base): \(caught.suffix(400))")
                }
            } catch {
                await nginx.stop()
                throw error
            }
            await nginx.stop()
        }
    }
}
