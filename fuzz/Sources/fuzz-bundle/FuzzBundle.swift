import Crypto
import Foundation
import FuzzSupport
import PolicyBundle
import PolicyCompiler
import PolicyModel

/// libFuzzer entry for the signed bundle reader (`PolicyBundle.parse`, `verify`, `open`, then `compile`). The first
/// byte picks a mode:
///
/// - plain (0): the rest is a bundle file. Besides a trap or hang, a finding is: `parse` accepting what its layout
///   reader refuses, or a name or path it should have refused; an error without a description; a bundle `verify`
///   accepts (under the fixed key the committed seeds are signed with) that is not exactly the canonical bytes of its
///   own manifest and files signed by that key (a malleable signature or a second reading of the same bytes), or
///   whose files compile to another policy hash.
/// - structured (1): the bytes choose a manifest and files (FuzzSupport's small policy set, with files renamed, added,
///   dropped or rewritten; the name, format version, key id, hashes and revision each right or wrong), which are laid
///   out and signed with the fixed key, so the fuzzer gets past the signature to every later check. `verify` must
///   accept exactly when every field is right, and then return the same manifest and files.
/// - tampered (2): as structured, then 1 to 4 bytes of the signed file are changed, or bytes are cut or appended:
///   `verify` must refuse whatever was changed (a forgery never verifies).
public func fuzzBundle(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    switch input.byte() % 3 {
    case 0: plain(input.rest())
    case 1: structured(&input, tamper: false)
    default: structured(&input, tamper: true)
    }
}

enum Fixed {
    /// The key the committed seeds are signed with (a fixed, public test key: nothing it signs is trusted anywhere).
    static let key = try! BundleSigningKey(fileText: "gatehouse-ed25519-private-key:" + Data(repeating: 0x42, count: 32).base64EncodedString())
    static let otherKey = try! BundleSigningKey(fileText: "gatehouse-ed25519-private-key:" + Data(repeating: 0x24, count: 32).base64EncodedString())
    static let trusted = [key.publicKey]
    /// A manifest to change field by field (its memberwise initialiser is the module's own).
    static let manifest = try! PolicyBundle.build(name: "contacasal", files: files, key: key, createdAt: Date(timeIntervalSince1970: 0), revision: 1).manifest

    /// The files structured mode starts from: `FuzzSupport`'s small set. `accepted` compiles them for every bundle
    /// verify accepts, and the shipped contacasal set (8 KB) made that compile three quarters of the target's cost.
    static let files = SmallPolicySet.files
}

func plain(_ bytes: [UInt8]) {
    let layout = Result { () throws(BundleVerificationError) in try PolicyBundle.parseLayout(bytes) }
    let parsed = Result { () throws(BundleVerificationError) in try PolicyBundle.parse(bytes) }
    for case .failure(let error) in [layout.map { _ in () }, parsed.map { _ in () }] where error.description.isEmpty || error.code.isEmpty {
        finding("a refusal without a description")
    }
    if case .success(let p) = parsed {
        guard case .success = layout else { finding("parse accepted what parseLayout refused") }
        if let problem = BundleManifest.problem(withName: p.bundle.manifest.name) { finding("parse accepted a name that \(problem)") }
        for path in p.bundle.files.keys where PolicyBundle.problem(withPath: path) != nil { finding("parse accepted the path \(BundleManifest.printable(path))") }
        if p.signedCount + 64 != bytes.count || p.signature.count != 64 { finding("the signed range is not the file less its 64-byte signature") }
    }
    if let opened = try? PolicyBundle.open(bytes) { _ = opened.compile() }
    guard let bundle = try? PolicyBundle.verify(bytes, trusting: Fixed.trusted) else { return }
    let canonical = PolicyBundle.encode(manifest: bundle.manifest, files: bundle.files, key: Fixed.key)
    if canonical.bytes != bytes { finding("verify accepted bytes that are not the canonical signed bundle of their own manifest and files") }
    accepted(bundle)
}

/// What holds of every bundle `verify` accepted: it compiles to the policy hash its manifest names, or its files do not
/// compile at all (verify checks hashes, not that the set compiles; the app refuses such a set when it installs it).
func accepted(_ bundle: PolicyBundle) {
    let result = bundle.compile()
    if let policy = result.policy, policy.contentHash != bundle.manifest.policyHash {
        finding("a verified bundle compiles to \(policy.contentHash), its manifest says \(bundle.manifest.policyHash)")
    }
}

func structured(_ input: inout FuzzInput, tamper: Bool) {
    var files = Fixed.files
    var pathsOK = true
    for _ in 0..<input.below(4) {
        let paths = files.keys.sorted()
        switch input.below(5) {
        case 0:  // rewrite a file
            if !paths.isEmpty {
                let path = input.pick(paths)
                files[path] = input.chunk()
            }
        case 1:  // drop a file
            if let path = paths.isEmpty ? nil : input.pick(paths) { files[path] = nil }
        default:  // add or rename to a chosen path
            let path = input.pick(["extra.yaml", "sub/extra.yaml", "../escape.yaml", "/abs.yaml", "a//b.yaml", "./a.yaml", "a\\b.yaml", ""])
            let full = path + (input.bool() ? input.string(max: 24) : "")
            let rename = !paths.isEmpty && input.bool()
            if rename {
                let old = input.pick(paths)
                files[full] = files.removeValue(forKey: old)
            } else {
                files[full] = input.chunk()
            }
        }
    }
    for path in files.keys where PolicyBundle.problem(withPath: path) != nil { pathsOK = false }

    let suffix = input.bool() ? input.string(max: 16) : ""
    let name = input.pick(["contacasal", "contacasal", "", ".", "..", "a/b", "a\\b", "x\u{0}y", "x\u{202E}y", String(repeating: "n", count: 256)]) + suffix
    let anyVersion = Int(input.byte())
    let formatVersion = input.pick([1, 1, 1, 0, 2, -1, 65536 + 1, anyVersion])
    let sectionHash = PolicyBundle.hex(SHA256.hash(data: PolicyBundle.filesSection(files)))
    let policyHash = PolicyCompiler.contentHash(of: files.map { PolicyFileInput(path: $0.key, bytes: $0.value) }.sorted { $0.path < $1.path })
    let chosen = input.string(max: 64)
    let contentHash = input.byte() % 4 != 3 ? sectionHash : input.pick(["", String(sectionHash.reversed()), chosen])
    let manifestPolicyHash = input.byte() % 4 != 3 ? policyHash : input.pick(["", "sha256:" + sectionHash, chosen])
    let createdAt = input.pick(["2026-11-28T00:00:00Z", "", chosen])
    let keyChoice = input.below(4)  // 1: another key's id; 2: a chosen string; else ours
    let anyRevision = input.uint64()
    let revision = input.pick([0, 1, 7, UInt64.max, anyRevision])
    let held: UInt64? = input.pick([nil, 0, 7, UInt64.max])
    var manifest = Fixed.manifest
    manifest.formatVersion = formatVersion
    manifest.name = name
    manifest.contentHash = contentHash
    manifest.policyHash = manifestPolicyHash
    manifest.createdAt = createdAt
    manifest.revision = revision
    manifest.keyID = keyChoice == 1 ? Fixed.otherKey.publicKey.keyID : keyChoice == 2 ? String(chosen.prefix(16)) : Fixed.key.publicKey.keyID
    let bundle = PolicyBundle.encode(manifest: manifest, files: files, key: Fixed.key)

    let expected = BundleManifest.problem(withName: name) == nil && pathsOK && (0...1).contains(formatVersion)
        && manifest.keyID == Fixed.key.publicKey.keyID && manifest.contentHash == sectionHash && manifest.policyHash == policyHash
        && (held.map { revision >= $0 } ?? true)
    if tamper {
        var bytes = bundle.bytes
        switch input.below(3) {
        case 0:
            for _ in 0...input.below(4) {
                let at = input.below(bytes.count)
                let flip = max(1, input.byte())
                bytes[at] ^= flip
            }
        case 1: bytes.removeLast(1 + input.below(min(bytes.count, 256)))
        default:
            let first = input.byte()
            bytes += [first] + input.chunk()
        }
        if bytes == bundle.bytes { return }
        if let forged = try? PolicyBundle.verify(bytes, trusting: Fixed.trusted, heldRevision: held) {
            finding("a changed bundle verified (name \(BundleManifest.printable(forged.manifest.name)), revision \(forged.manifest.revision))")
        }
        return
    }
    do {
        let verified = try PolicyBundle.verify(bundle.bytes, trusting: Fixed.trusted, heldRevision: held)
        if !expected { finding("verify accepted a bundle with a wrong field: \(manifest) paths \(files.keys.sorted().map(BundleManifest.printable))") }
        if verified.manifest != manifest || verified.files != files { finding("verify read back another manifest or other files") }
        accepted(verified)
    } catch {
        if expected { finding("verify refused a bundle whose every field is right (\(error.code)): \(manifest)") }
        if error.description.isEmpty { finding("a refusal without a description") }
    }
}
