import Foundation
import GatehouseTestSupport
import PolicyBundle
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

    /// `policy` with TMPDIR pointed at `tmp`, so a test sees every temporary folder it makes.
    func run(_ arguments: [String], tmp: URL) async throws -> Finished {
        try await Program(CLITests.binary, arguments, environment: .inherited(adding: ["TMPDIR": tmp.path]), in: CLITests.root).run()
    }

    /// A bundle of mimisupply signed by `key`, its manifest and files edited before signing (hashes kept).
    func crafted(key: BundleSigningKey, name: String? = nil, extraFiles: [String: String] = [:]) throws -> [UInt8] {
        let good = try PolicyBundle.build(
            directory: CLITests.root.appendingPathComponent("policies/mimisupply").path, key: key, createdAt: Date(timeIntervalSince1970: 1_790_000_000),
            revision: 3)
        guard name != nil || !extraFiles.isEmpty else { return good.bytes }
        var files = good.files
        for (path, text) in extraFiles { files[path] = Array(text.utf8) }
        let rebuilt = extraFiles.isEmpty ? good : try PolicyBundle.build(name: good.manifest.name, files: files, key: key, createdAt: Date(timeIntervalSince1970: 1_790_000_000), revision: 3)
        var manifest = rebuilt.manifest
        if let name { manifest.name = name }
        return PolicyBundle.encode(manifest: manifest, files: rebuilt.files, key: key).bytes
    }

    /// N1 (issue 36): a bundle named like a path (signed by any throwaway key) writes nothing outside the temporary
    /// folder: check and matrix refuse it, naming the field, and leave no temporary folder behind.
    @Test func aBundleNamedLikeAPathWritesNothingOutsideTheTemporaryFolder() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tmp = dir.appendingPathComponent("tmp", isDirectory: true)
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("evil.bundle")
        try Data(try crafted(key: BundleSigningKey(), name: "../../escaped")).write(to: file)
        for command in ["check", "matrix"] {
            let result = try await run([command, file.path], tmp: tmp)
            #expect(result.status == 1, "\(command): \(result.standardOutput)\(result.standardError)")
            #expect(result.standardError.contains("name"), "\(command): \(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("escaped").path), "\(command) wrote outside")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "\(command) left a temporary folder")
        }
        // inspect still shows the name (escaped) and warns about it.
        let inspect = try await run(["bundle", "inspect", file.path], tmp: tmp)
        #expect(inspect.status == 0, "\(inspect.standardError)")
        #expect(inspect.standardOutput.contains("../../escaped"))
        #expect(inspect.standardError.contains("warning"), "\(inspect.standardError)")
    }

    /// N1: a bundle whose files cannot be unpacked (a file where another needs a folder) fails check, and the
    /// temporary folder is removed on that path too.
    @Test func checkRemovesTheTemporaryFolderWhenUnpackingFails() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tmp = dir.appendingPathComponent("tmp", isDirectory: true)
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("clash.bundle")
        try Data(try crafted(key: BundleSigningKey(), extraFiles: ["x.yaml": "# empty\n", "x.yaml/y.yaml": "# empty\n"])).write(to: file)
        let result = try await run(["check", file.path], tmp: tmp)
        #expect(result.status != 0, "\(result.standardOutput)\(result.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "check left a temporary folder")
    }

    /// N1: check and matrix say a bundle read without a key is unverified; with --public-key they verify the
    /// signature first and refuse a bundle the key did not sign.
    @Test func checkAndMatrixSayUnverifiedUnlessAPublicKeyVerifiedTheSignature() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = BundleSigningKey(), other = BundleSigningKey()
        let file = dir.appendingPathComponent("a.bundle")
        try Data(try crafted(key: key)).write(to: file)
        for command in ["check", "matrix"] {
            let unverified = try await CLITests.run([command, file.path])
            #expect(unverified.status == 0, "\(command): \(unverified.err)")
            #expect((unverified.out + unverified.err).contains("unverified bundle"), "\(command)")
            let verified = try await CLITests.run([command, file.path, "--public-key", key.publicKey.base64])
            #expect(verified.status == 0, "\(command): \(verified.err)")
            #expect(!(verified.out + verified.err).contains("unverified"), "\(command)")
            let refused = try await CLITests.run([command, file.path, "--public-key", other.publicKey.base64])
            #expect(refused.status == 1, "\(command): \(refused.out)\(refused.err)")
            #expect(refused.err.contains("unknown_key") || refused.err.contains("unknown key"), "\(command): \(refused.err)")
        }
    }

    /// Issue 36: a signing key file other users can read is used, with a warning naming the file (never the key).
    @Test func buildWarnsWhenTheKeyFileIsReadableByOthers() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyFile = dir.appendingPathComponent("key").path
        #expect(try await CLITests.run(["keygen", "--out", keyFile]).status == 0)
        let out = dir.appendingPathComponent("a.bundle").path
        let quiet = try await CLITests.run(["bundle", "build", "policies/mimisupply", "--key", keyFile, "-o", out])
        #expect(quiet.status == 0 && !quiet.err.contains("warning"), "\(quiet.err)")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyFile)
        let loud = try await CLITests.run(["bundle", "build", "policies/mimisupply", "--key", keyFile, "-o", out])
        #expect(loud.status == 0, "\(loud.err)")
        #expect(loud.err.contains("warning") && loud.err.contains(keyFile) && loud.err.contains("0644"), "\(loud.err)")
        let secret = try String(contentsOfFile: keyFile, encoding: .utf8).split(separator: ":").last.map(String.init) ?? ""
        #expect(!loud.err.contains(secret.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
