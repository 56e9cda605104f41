import Foundation
import Testing
import GatehouseTestSupport

/// `policy keygen` and `policy bundle`: the key file's mode, determinism through the tool, verify's exit codes, and
/// `check`/`matrix` reading a bundle as its folder.
@Suite(.startsServers) struct BundleCLITests {
    func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-cli-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func keygenWritesAPrivateFileAndBuildIsDeterministicAndVerifyNamesTheFailedCheck() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyFile = dir.appendingPathComponent("key").path
        let keygen = try await CLITests.run(["keygen", "--out", keyFile])
        #expect(keygen.status == 0)
        let publicKey = keygen.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The private key is on disk, never printed.
        let secret = try String(contentsOfFile: keyFile, encoding: .utf8)
        #expect(!(keygen.out + keygen.err).contains(String(secret.split(separator: ":").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try await CLITests.run(["keygen", "--out", keyFile]).status == 73)

        let a = dir.appendingPathComponent("a.bundle").path, b = dir.appendingPathComponent("b.bundle").path
        for out in [a, b] {
            let built = try await CLITests.run(["bundle", "build", "policies/mimisupply", "--key", keyFile, "-o", out, "--created", "2026-11-25T12:00:00Z", "--revision", "4"])
            #expect(built.status == 0, "\(built.err)")
        }
        #expect(FileManager.default.contents(atPath: a) == FileManager.default.contents(atPath: b))

        #expect(try await CLITests.run(["bundle", "verify", a, "--public-key", publicKey]).status == 0)
        let downgrade = try await CLITests.run(["bundle", "verify", a, "--public-key", publicKey, "--held-revision", "5"])
        #expect(downgrade.status == 2)
        #expect(downgrade.err.contains("(downgrade)"))
        let otherKey = try await CLITests.run(["keygen", "--out", dir.appendingPathComponent("other").path]).out
        let unknown = try await CLITests.run(["bundle", "verify", a, "--public-key", otherKey])
        #expect(unknown.status == 2)
        #expect(unknown.err.contains("(unknown_key)"))
        var bytes = try #require(FileManager.default.contents(atPath: a))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: b))
        let bad = try await CLITests.run(["bundle", "verify", b, "--public-key", publicKey])
        #expect(bad.status == 2)
        #expect(bad.err.contains("(signature)"))
        #expect(try await CLITests.run(["bundle", "verify", a, "--public-key", "nonsense"]).status == 64)

        // check and matrix read the bundle as the folder it holds.
        let json = try await CLITests.run(["bundle", "inspect", a, "--format", "json"])
        #expect(json.status == 0)
        let manifest = try #require((try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])?["manifest"] as? [String: Any])
        #expect(manifest["revision"] as? Int == 4)
        #expect(manifest["name"] as? String == "mimisupply")
        let check = try await CLITests.run(["check", a])
        #expect(check.status == 0)
        #expect(check.out.contains(a))
        let folderMatrix = try await CLITests.run(["matrix", "policies/mimisupply", "--format", "json"])
        let bundleMatrix = try await CLITests.run(["matrix", a, "--format", "json"])
        #expect(bundleMatrix.status == 0)
        // The same table; locations name the files by their paths in the bundle rather than under policies/.
        #expect(bundleMatrix.out == folderMatrix.out.replacingOccurrences(of: "policies/mimisupply/", with: ""))
    }
}
