import Foundation
import GatehouseEngine
import PolicyVerification
import Testing

/// The files of a folder by relative path, as a bundle holds them.
func folderFiles(_ path: String) throws -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for file in PolicyCompiler.policyFiles(in: path) {
        files[String(file.dropFirst(path.count + 1))] = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
    }
    return files
}

let fixedDate = Date(timeIntervalSince1970: 1_790_000_000)

@Suite struct PolicyBundleTests {
    let key = BundleSigningKey()
    var set: String { shippedSets.first(where: { $0.hasSuffix("mimisupply") }) ?? shippedSets[0] }

    func bundle(revision: UInt64 = 7) throws -> PolicyBundle {
        try PolicyBundle.build(directory: set, key: key, createdAt: fixedDate, revision: revision)
    }

    /// A bundle laid out and signed by the trusted key from a manifest edited by `edit`.
    func forged(_ edit: (inout BundleManifest) -> Void) throws -> [UInt8] {
        let good = try bundle()
        var manifest = good.manifest
        edit(&manifest)
        return PolicyBundle.encode(manifest: manifest, files: good.files, key: key).bytes
    }

    func refusal(_ bytes: [UInt8], trusting keys: [BundlePublicKey]? = nil, held: UInt64? = nil) -> BundleVerificationError? {
        do {
            _ = try PolicyBundle.verify(bytes, trusting: keys ?? [key.publicKey], heldRevision: held)
            return nil
        } catch { return error }
    }

    @Test func everyShippedSetRoundTripsToThePolicyTheServerLoads() throws {
        for path in shippedSets {
            let built = try PolicyBundle.build(directory: path, key: key, createdAt: fixedDate, revision: 1)
            let verified = try PolicyBundle.verify(built.bytes, trusting: [key.publicKey])
            let folder = try #require(PolicyCompiler.load(directory: path, relativePaths: true).policy)
            // The manifest names the version hash the server reports for the folder, and the bundle compiles to it.
            #expect(verified.manifest.policyHash == folder.contentHash)
            #expect(verified.manifest.name == folder.name)
            let compiled = try #require(verified.compile().policy)
            #expect(compiled.contentHash == folder.contentHash)
            for cell in DecisionMatrix(policy: folder).tables.flatMap({ $0.cells.joined() }) {
                #expect(compiled.decide(cell.request) == folder.decide(cell.request))
            }
        }
    }

    @Test func theSameFolderKeyTimeAndRevisionGiveTheSameBytes() throws {
        let a = try bundle(), b = try bundle()
        #expect(a.bytes == b.bytes)
        // Files handed over as bytes, in another dictionary order, give the same file too.
        let files = try folderFiles(set)
        let c = try PolicyBundle.build(
            name: URL(fileURLWithPath: set).lastPathComponent, files: files, key: key, createdAt: fixedDate, revision: 7)
        #expect(c.bytes == a.bytes)
        #expect(try bundle(revision: 8).bytes != a.bytes)
        #expect(try PolicyBundle.build(directory: set, key: key, createdAt: fixedDate.addingTimeInterval(1), revision: 7).bytes != a.bytes)
    }

    @Test func refusesABadSignature() throws {
        var bytes = try bundle().bytes
        bytes[bytes.count - 1] ^= 0x01
        #expect(refusal(bytes) == .badSignature(keyID: key.publicKey.keyID))
        // A byte of a file changed after signing: the signature fails before any hash is looked at.
        var tampered = try bundle().bytes
        tampered[tampered.count - 70] ^= 0x20
        #expect(refusal(tampered) == .badSignature(keyID: key.publicKey.keyID))
    }

    @Test func refusesAnUnknownKey() throws {
        let other = BundleSigningKey()
        let bytes = try PolicyBundle.build(directory: set, key: other, createdAt: fixedDate, revision: 1).bytes
        #expect(refusal(bytes) == .unknownKey(keyID: other.publicKey.keyID))
        // Pinning the other key too accepts it.
        #expect(refusal(bytes, trusting: [key.publicKey, other.publicKey]) == nil)
    }

    @Test func refusesAContentHashMismatch() throws {
        let bytes = try forged { $0.contentHash = String(repeating: "0", count: 64) }
        guard case .contentHashMismatch(let expected, _) = refusal(bytes) else {
            Issue.record("expected a content hash mismatch, got \(String(describing: refusal(bytes)))")
            return
        }
        #expect(expected == String(repeating: "0", count: 64))
    }

    @Test func refusesAPolicyHashMismatch() throws {
        let bytes = try forged { $0.policyHash = String(repeating: "f", count: 64) }
        guard case .policyHashMismatch = refusal(bytes) else {
            Issue.record("expected a policy hash mismatch, got \(String(describing: refusal(bytes)))")
            return
        }
    }

    @Test func refusesANewerFormatVersion() throws {
        let bytes = try forged { $0.formatVersion = PolicyBundle.formatVersion + 1 }
        #expect(refusal(bytes) == .newerFormatVersion(found: PolicyBundle.formatVersion + 1, supported: PolicyBundle.formatVersion))
    }

    @Test func refusesADowngrade() throws {
        let bytes = try bundle(revision: 5).bytes
        #expect(refusal(bytes, held: 6) == .downgrade(revision: 5, held: 6))
        #expect(refusal(bytes, held: 5) == nil)
        #expect(refusal(bytes, held: 4) == nil)
    }

    @Test func refusesBytesThatAreNotABundle() throws {
        let bytes = try bundle().bytes
        #expect(refusal(Array(bytes.prefix(40)))?.code == "malformed")
        #expect(refusal(Array("not a bundle at all, not at all, not at all, not at all, not at all, no".utf8))?.code == "malformed")
        var longer = bytes
        longer.insert(0, at: bytes.count - 64)
        #expect(refusal(longer)?.code == "malformed")
    }

    /// N1 (issue 36): a manifest name is a label of one path component, refused when parsed otherwise, signed or not.
    @Test(arguments: ["../../home/me/.ssh", "..", ".", "", "a/b", "/etc", "a\\b", "a\u{0}b", "tab\tname", "line\nbreak", "\u{7F}"])
    func refusesAManifestNameThatIsNotOnePrintablePathComponent(_ name: String) throws {
        let bytes = try forged { $0.name = name }
        let refused = refusal(bytes)
        #expect(refused?.code == "malformed", "\(name.debugDescription)")
        #expect(refused.map { String(describing: $0) }?.contains("name") == true)
        #expect(throws: BundleVerificationError.self) { try PolicyBundle.open(bytes) }
        #expect(throws: BundleVerificationError.self) { try PolicyBundle.parse(bytes) }
    }

    @Test func acceptsAnOrdinaryManifestName() throws {
        for name in ["mimisupply", "research-crawler", "set.v2", "Política_1"] {
            #expect(refusal(try forged { $0.name = name }) == nil, "\(name)")
        }
    }

    /// N1: each destination is resolved, and one that lands outside the folder (through a symbolic link already
    /// there) is refused before anything is written.
    @Test func extractRefusesADestinationThatResolvesOutsideTheFolder() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("set", isDirectory: true), outside = root.appendingPathComponent("outside", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link"), withDestinationURL: outside)
        var files = try bundle().files
        files["link/escaped.yaml"] = Array("# not a policy\n".utf8)
        let crafted = PolicyBundle.encode(manifest: try bundle().manifest, files: files, key: key)
        #expect(throws: BundleVerificationError.self) { try crafted.extract(to: folder) }
        #expect(!FileManager.default.fileExists(atPath: outside.appendingPathComponent("escaped.yaml").path))
    }

    @Test func aSetThatDoesNotCompileIsNotBundled() {
        #expect(throws: BundleBuildError.self) {
            try PolicyBundle.build(name: "bad", files: ["a.yaml": Array("resources: [".utf8)], key: key, createdAt: fixedDate, revision: 1)
        }
    }

    @Test func keysRoundTripThroughTheirText() throws {
        let again = try BundleSigningKey(fileText: key.fileText)
        #expect(again.publicKey == key.publicKey)
        #expect(try BundlePublicKey(base64: key.publicKey.base64) == key.publicKey)
        #expect(throws: BundleKeyError.self) { try BundlePublicKey(base64: "AAAA") }
        #expect(throws: BundleKeyError.self) { try BundleSigningKey(fileText: key.publicKey.base64) }
        // The key's text is in no error.
        #expect(!String(describing: BundleVerificationError.badSignature(keyID: key.publicKey.keyID)).contains(key.publicKey.base64))
    }

    // MARK: The device's store

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("bundle-store-\(UUID().uuidString)", isDirectory: true)
    }

    @Test func theStoreLoadsTheLastGoodBundleAtLaunchWithNoNetwork() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = PolicyBundleStore(directory: directory, trustedKeys: [key.publicKey])
        #expect(first.current == nil)
        let request = Request(action: "view", resource: Resource(type: "product"))
        #expect(first.decide(request) == nil)
        let installed = try first.install(try bundle(revision: 3).bytes)
        // A new launch: a fresh store over the same directory decides from the stored bundle, offline.
        let relaunched = PolicyBundleStore(directory: directory, trustedKeys: [key.publicKey])
        let held = try #require(relaunched.current)
        #expect(held.manifest == installed.manifest)
        let folder = try #require(PolicyCompiler.load(directory: set, relativePaths: true).policy)
        let answer = try #require(relaunched.decide(request))
        #expect(answer.decision == folder.decide(request))
        #expect(answer.policyHash == folder.contentHash)
        // A launch that pins another key ignores the stored bundle.
        #expect(PolicyBundleStore(directory: directory, trustedKeys: [BundleSigningKey().publicKey]).current == nil)
    }

    @Test func theStoreRefusesADowngradeAndKeepsWhatItHolds() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = PolicyBundleStore(directory: directory, trustedKeys: [key.publicKey])
        try store.install(try bundle(revision: 9).bytes)
        #expect(throws: PolicyBundleStoreError.self) { try store.install(try bundle(revision: 8).bytes) }
        #expect(store.current?.manifest.revision == 9)
        var bad = try bundle(revision: 10).bytes
        bad[bad.count - 1] ^= 1
        #expect(throws: PolicyBundleStoreError.self) { try store.install(bad) }
        #expect(store.current?.manifest.revision == 9)
        // What is on disk is still the good bundle.
        #expect(PolicyBundleStore(directory: directory, trustedKeys: [key.publicKey]).current?.manifest.revision == 9)
        try store.install(try bundle(revision: 10).bytes)
        #expect(store.current?.manifest.revision == 10)
    }
}
