import Crypto
import Foundation
import FuzzSupport
import PolicyBundle
import PolicyCompiler
import PolicyModel

/// libFuzzer entry, differential: build -> parse -> the same files and hashes. The bytes choose a policy set (the
/// small built-in set below with one file rewritten or edited by the fuzzer, or a file added under a chosen path), a name,
/// a creation time and a revision; `PolicyBundle.build` either refuses it (a set that does not compile, a bad name or
/// path) or builds a bundle that must:
/// - parse, `open` and `verify` (under its key, with its own revision held) to exactly the files and manifest built;
/// - carry the SHA-256 of its files section and the policy hash the compiler gives its files;
/// - compile to a policy with that hash;
/// - be built again to the same bytes (a build is deterministic).
/// A refusal must name its reason; a set with a bad name or path must be refused.
public func fuzzBundleRoundtrip(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    var files = Shipped.files
    let paths = files.keys.sorted()
    switch input.below(3) {
    case 0: files[input.pick(paths)] = input.rest()
    case 1:
        let path = input.pick(["more.yaml", "sub/more.yaml", "a b.yaml", "../more.yaml", "x\u{1}.yaml"]) + (input.bool() ? input.string(max: 12) : "")
        files[path] = input.rest()
    default:
        // A small edit to one file: bytes replaced at a chosen place (the shipped text keeps it mostly valid).
        let path = input.pick(paths)
        var bytes = files[path]!
        let at = input.below(bytes.count)
        let replacement = input.chunk(max: 32)
        let cut = min(input.below(8), bytes.count - at)
        bytes.replaceSubrange(at..<at + cut, with: replacement)
        files[path] = bytes
    }
    let name = input.pick(["research-crawler", "research-crawler", "r", "..", "a/b", ""]) + (input.bool() ? input.string(max: 8) : "")
    let createdAt = Date(timeIntervalSince1970: Double(input.uint64() % 4_102_444_800))
    let revision = input.uint64()

    let bundle: PolicyBundle
    do {
        bundle = try PolicyBundle.build(name: name, files: files, key: Shipped.key, createdAt: createdAt, revision: revision)
    } catch {
        if error.description.isEmpty { finding("a build refusal without a reason") }
        return
    }
    if BundleManifest.problem(withName: name) != nil { finding("build accepted the name \(BundleManifest.printable(name))") }
    for path in files.keys where PolicyBundle.problem(withPath: path) != nil { finding("build accepted the path \(BundleManifest.printable(path))") }

    let manifest = bundle.manifest
    let sectionHash = PolicyBundle.hex(SHA256.hash(data: PolicyBundle.filesSection(files)))
    let policyHash = PolicyCompiler.contentHash(of: files.map { PolicyFileInput(path: $0.key, bytes: $0.value) }.sorted { $0.path < $1.path })
    if manifest.contentHash != sectionHash { finding("the manifest's content hash is not the files section's") }
    if manifest.policyHash != policyHash { finding("the manifest's policy hash is not the files' hash") }
    if manifest.name != name || manifest.revision != revision || manifest.formatVersion != PolicyBundle.formatVersion { finding("the manifest lost a field") }
    do {
        let parsed = try PolicyBundle.parse(bundle.bytes).bundle
        let opened = try PolicyBundle.open(bundle.bytes)
        let verified = try PolicyBundle.verify(bundle.bytes, trusting: [Shipped.key.publicKey], heldRevision: revision)
        for read in [parsed, opened, verified] where read.files != files || read.manifest != manifest || read.bytes != bundle.bytes {
            finding("a bundle read back with other files or another manifest")
        }
    } catch {
        finding("a bundle just built does not read back: \(error)")
    }
    guard let policy = bundle.compile().policy else { finding("a bundle built from a set that compiles does not compile") }
    if policy.contentHash != manifest.policyHash { finding("the bundle compiles to another policy hash") }
    let again = try? PolicyBundle.build(name: name, files: files, key: Shipped.key, createdAt: createdAt, revision: revision)
    if again?.bytes != bundle.bytes { finding("the same set, key, time and revision built different bytes") }
}

enum Shipped {
    static let key = try! BundleSigningKey(fileText: "gatehouse-ed25519-private-key:" + Data(repeating: 0x42, count: 32).base64EncodedString())
    /// The small set of `FuzzSupport` (`SmallPolicySet`): compiled up to three times per input (build, the bundle's
    /// compile, the determinism rebuild), so its size is most of the target's cost; research-crawler's 13 KB ran about 80
    /// inputs a CPU-second in a release build.
    static let files = SmallPolicySet.files
}
