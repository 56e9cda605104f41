import Crypto
import Foundation
import PolicyCompiler
import PolicyModel

/// The manifest of a policy bundle: what the bundle holds and which version of the set it is. Signed with the files.
public struct BundleManifest: Codable, Sendable, Hashable {
    /// The bundle layout this file follows (`PolicyBundle.formatVersion` when built by this release).
    public var formatVersion: Int
    /// The policy set's name (its folder's name).
    public var name: String
    /// SHA-256 (hex) of the files section of the bundle, exactly as it is laid out in the file.
    public var contentHash: String
    /// The policy version hash `policy serve` reports (`Gatehouse-Policy`, `/v1/policy`): `CompiledPolicy.contentHash`.
    public var policyHash: String
    /// When the bundle was built, UTC, whole seconds (ISO 8601).
    public var createdAt: String
    /// Monotonically increasing: a device refuses a bundle whose revision is lower than the one it holds.
    public var revision: UInt64
    /// The signing key's id (hex of the first 8 bytes of SHA-256 of the raw public key).
    public var keyID: String

    /// Why `name` cannot be a set's name, nil when it can. A name is a label, never a path: one component of 1 to 255
    /// bytes, printable (no control, format or line-separator characters, no NUL), not `.` or `..`, with neither `/`
    /// nor `\\`. `PolicyBundle.parse` (so `verify`, `open` and every app's install) refuses a manifest whose name fails.
    public static func problem(withName name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.utf8.count > 255 { return "is longer than 255 bytes" }
        if name == "." || name == ".." { return "is '\(name)', not a name" }
        if name.contains("/") || name.contains("\\") { return "holds a path separator ('/' or '\\'): a name is one path component" }
        for scalar in name.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
                return "holds the unprintable character U+\(String(scalar.value, radix: 16, uppercase: true))"
            default: continue
            }
        }
        return nil
    }

    /// The name as a quoted string safe to print whatever it holds: control and other unprintable characters escaped,
    /// cut at 80 characters.
    public static func printable(_ name: String) -> String {
        var out = ""
        for (i, scalar) in name.unicodeScalars.enumerated() {
            if i == 80 {
                out += "..."
                break
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return "'" + out + "'"
    }
}

/// Why a bundle was refused. Each case names the check that failed; none carries key material.
public enum BundleVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a bundle: wrong magic, truncated, a length past the end, a manifest that does not decode.
    case malformed(String)
    /// The bundle is of a format version newer than this reader knows.
    case newerFormatVersion(found: Int, supported: Int)
    /// The bundle was signed by a key that is not pinned.
    case unknownKey(keyID: String)
    /// The signature does not verify over the bundle's canonical bytes with the pinned key.
    case badSignature(keyID: String)
    /// The files do not hash to the manifest's `contentHash`.
    case contentHashMismatch(expected: String, actual: String)
    /// The files do not compile to the manifest's `policyHash` (the server's version hash).
    case policyHashMismatch(expected: String, actual: String)
    /// The bundle's revision is lower than the revision already held.
    case downgrade(revision: UInt64, held: UInt64)

    /// The check that failed, as a stable code: malformed, format_version, unknown_key, signature, content_hash,
    /// policy_hash, downgrade.
    public var code: String {
        switch self {
        case .malformed: "malformed"
        case .newerFormatVersion: "format_version"
        case .unknownKey: "unknown_key"
        case .badSignature: "signature"
        case .contentHashMismatch: "content_hash"
        case .policyHashMismatch: "policy_hash"
        case .downgrade: "downgrade"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let what): "malformed bundle: \(what)"
        case .newerFormatVersion(let found, let supported):
            "format version \(found) is newer than this reader supports (\(supported))"
        case .unknownKey(let keyID): "signed by an unknown key (key id \(keyID))"
        case .badSignature(let keyID): "bad signature (key id \(keyID))"
        case .contentHashMismatch(let expected, let actual): "content hash mismatch: manifest says \(expected), files hash to \(actual)"
        case .policyHashMismatch(let expected, let actual): "policy hash mismatch: manifest says \(expected), files compile to \(actual)"
        case .downgrade(let revision, let held): "downgrade: revision \(revision) is lower than the revision held (\(held))"
        }
    }
}

/// Why a bundle could not be built.
public enum BundleBuildError: Error, Sendable, CustomStringConvertible {
    /// The set does not compile: a bundle only ever holds a set that loads.
    case doesNotCompile([Diagnostic])
    /// A file or folder could not be read.
    case unreadable(String)
    /// The set's name (its folder's name) or a file's path cannot be carried by a bundle (`BundleManifest.problem(withName:)`).
    case invalidName(String)

    public var description: String {
        switch self {
        case .doesNotCompile(let diagnostics):
            "the policy set does not compile: "
                + diagnostics.filter { $0.severity == .error }.map { [$0.location?.description, $0.message].compactMap { $0 }.joined(separator: ": ") }
                .joined(separator: "; ")
        case .unreadable(let what): what
        case .invalidName(let what): what
        }
    }
}

/// An Ed25519 key a bundle is signed with, and its public half. Printed or dumped, it shows its key id only.
public struct BundleSigningKey: Sendable, SecretRedacting {
    package let key: Curve25519.Signing.PrivateKey

    /// A new random key.
    public init() { key = Curve25519.Signing.PrivateKey() }

    /// The key from its file's text (`policy keygen` writes it): `gatehouse-ed25519-private-key:` then base64 of the raw 32 bytes.
    public init(fileText: String) throws(BundleKeyError) {
        let trimmed = fileText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.filePrefix), let raw = Data(base64Encoded: String(trimmed.dropFirst(Self.filePrefix.count))),
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else { throw BundleKeyError.notAPrivateKey }
        self.key = key
    }

    static let filePrefix = "gatehouse-ed25519-private-key:"

    /// The text of the key's file. It holds the secret: write it with mode 0600.
    public var fileText: String { Self.filePrefix + key.rawRepresentation.base64EncodedString() + "\n" }

    /// Why the key file at `path` is exposed, nil when only its owner may read or write it: a file other users can
    /// read or write holds a key any of them can sign bundles with. Names the mode, never the key.
    public static func exposure(ofKeyFile path: String) -> String? {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0 else { return nil }
        return "the key file '\(path)' can be read or written by users other than its owner (mode \(String(format: "%04o", mode & 0o7777))): run chmod 600 on it"
    }

    /// The key id only.
    public var shownFields: KeyValuePairs<String, Any> { ["keyID": publicKey.keyID, "key": Self.redacted] }

    /// The public half, to pin on devices.
    public var publicKey: BundlePublicKey { BundlePublicKey(key: key.publicKey) }
}

/// The public half of a bundle signing key: base64 of the raw 32 bytes, as `policy keygen` prints it.
public struct BundlePublicKey: Sendable, Hashable, CustomStringConvertible {
    package let key: Curve25519.Signing.PublicKey

    init(key: Curve25519.Signing.PublicKey) { self.key = key }

    /// The key from its base64 text (surrounding whitespace ignored).
    public init(base64: String) throws(BundleKeyError) {
        guard let raw = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)),
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
        else { throw BundleKeyError.notAPublicKey }
        self.key = key
    }

    /// Base64 of the raw key.
    public var base64: String { key.rawRepresentation.base64EncodedString() }
    /// The key id bundles name their signer by: hex of the first 8 bytes of SHA-256 of the raw key.
    public var keyID: String { SHA256.hash(data: key.rawRepresentation).prefix(8).map { String(format: "%02x", $0) }.joined() }
    public var description: String { base64 }

    public static func == (a: Self, b: Self) -> Bool { a.key.rawRepresentation == b.key.rawRepresentation }
    public func hash(into hasher: inout Hasher) { hasher.combine(key.rawRepresentation) }
}

/// A key text that is not a key.
public enum BundleKeyError: Error, Sendable, CustomStringConvertible {
    case notAPrivateKey, notAPublicKey
    public var description: String {
        switch self {
        case .notAPrivateKey: "not a Gatehouse bundle private key (expected the file policy keygen writes)"
        case .notAPublicKey: "not an Ed25519 public key (expected base64 of 32 bytes, as policy keygen prints)"
        }
    }
}

/// A signed policy bundle: one file holding a policy set's YAML files by relative path, a manifest and an
/// Ed25519 signature. The layout (docs/bundles.md), all integers big-endian:
///
///     "GHBUNDLE"  magic, 8 bytes
///     u16         format version
///     u32 + bytes the manifest: JSON, keys sorted, no whitespace
///     u32         file count, then per file in path order: u32 + path (UTF-8), u32 + bytes
///     64 bytes    Ed25519 signature over every byte before it
///
/// The manifest's `contentHash` is SHA-256 of the files section (from the file count to the last file's bytes).
public struct PolicyBundle: Sendable {
    /// The format version this release writes and the newest it reads.
    public static let formatVersion = 1
    static let magic = Array("GHBUNDLE".utf8)

    /// The manifest.
    public let manifest: BundleManifest
    /// The files, by relative path.
    public let files: [String: [UInt8]]
    /// The whole file.
    public let bytes: [UInt8]

    // MARK: Building

    /// Builds a bundle of the set in `directory`, signed with `key`. The same folder, key, creation time and revision
    /// give the same bytes. Refuses a set that does not compile.
    public static func build(
        directory: String, key: BundleSigningKey, createdAt: Date, revision: UInt64
    ) throws(BundleBuildError) -> PolicyBundle {
        let name = URL(fileURLWithPath: directory).standardizedFileURL.lastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .unreadable("'\(directory)' is not a policy set folder")
        }
        let listing = PolicyCompiler.policyFileListing(in: directory)
        if let folder = listing.unlistable.first { throw .unreadable("cannot list the folder '\(folder)'") }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        var files: [String: [UInt8]] = [:]
        for path in listing.files {
            guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable("cannot read '\(path)'") }
            files[path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path] = [UInt8](data)
        }
        return try build(name: name, files: files, key: key, createdAt: createdAt, revision: revision)
    }

    /// Builds a bundle of a set given as files by relative path. Refuses a set that does not compile.
    public static func build(
        name: String, files: [String: [UInt8]], key: BundleSigningKey, createdAt: Date, revision: UInt64
    ) throws(BundleBuildError) -> PolicyBundle {
        if let problem = BundleManifest.problem(withName: name) { throw .invalidName("the set's name \(BundleManifest.printable(name)) \(problem)") }
        for path in files.keys {
            if let problem = problem(withPath: path) { throw .invalidName("the file path \(BundleManifest.printable(path)) \(problem)") }
        }
        let result = PolicyCompiler.compile(name: name, files: files.map { PolicyFileInput(path: $0.key, bytes: $0.value) })
        guard let policy = result.policy else { throw .doesNotCompile(result.diagnostics) }
        let section = filesSection(files)
        let manifest = BundleManifest(
            formatVersion: formatVersion, name: name, contentHash: hex(SHA256.hash(data: section)), policyHash: policy.contentHash,
            createdAt: timestamp(createdAt), revision: revision, keyID: key.publicKey.keyID)
        return encode(manifest: manifest, files: files, key: key)
    }

    /// Lays out and signs a bundle from a manifest taken as given (the tests forge bundles with it).
    package static func encode(manifest: BundleManifest, files: [String: [UInt8]], key: BundleSigningKey) -> PolicyBundle {
        var out = magic
        out.append(contentsOf: [UInt8(truncatingIfNeeded: manifest.formatVersion >> 8), UInt8(truncatingIfNeeded: manifest.formatVersion)])
        let json = manifestJSON(manifest)
        append32(&out, json.count)
        out += json
        out += filesSection(files)
        // Ed25519 signing is deterministic (RFC 8032), so the same bytes and key give the same signature.
        let signature = try! key.key.signature(for: out)
        out += signature
        return PolicyBundle(manifest: manifest, files: files, bytes: out)
    }

    static func manifestJSON(_ manifest: BundleManifest) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try! encoder.encode(manifest))
    }

    /// The files section as laid out in a bundle (the bytes `contentHash` covers).
    package static func filesSection(_ files: [String: [UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        append32(&out, files.count)
        for path in files.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let name = Array(path.utf8)
            append32(&out, name.count)
            out += name
            append32(&out, files[path]!.count)
            out += files[path]!
        }
        return out
    }

    static func append32(_ out: inout [UInt8], _ value: Int) {
        let v = UInt32(value)
        out += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }

    package static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 { digest.map { String(format: "%02x", $0) }.joined() }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    // MARK: Reading

    /// Reads a bundle's layout and manifest without checking its signature or hashes, refusing a manifest name or a
    /// file path that is not a safe label (`BundleManifest.problem(withName:)`, `problem(withPath:)`). Everything
    /// decided from a bundle goes through `verify`.
    public static func parse(_ bytes: [UInt8]) throws(BundleVerificationError) -> (bundle: PolicyBundle, signedCount: Int, signature: [UInt8], section: Range<Int>) {
        let parsed = try parseLayout(bytes)
        let name = parsed.bundle.manifest.name
        if let problem = BundleManifest.problem(withName: name) { throw .malformed("the manifest's name \(BundleManifest.printable(name)) \(problem)") }
        for path in parsed.bundle.files.keys.sorted() {
            if let problem = problem(withPath: path) { throw .malformed("the file path \(BundleManifest.printable(path)) \(problem)") }
        }
        return parsed
    }

    /// Why `path` cannot be a file's path in a bundle, nil when it can: relative, each component a name
    /// (`BundleManifest.problem(withName:)`), so no `..`, `.`, empty component or leading `/`.
    public static func problem(withPath path: String) -> String? {
        if path.isEmpty { return "is empty" }
        if path.hasPrefix("/") { return "is absolute" }
        if path.contains("\\") { return "holds '\\'" }
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            if let problem = BundleManifest.problem(withName: String(component)) { return "leaves the set's folder or is not a plain path: a component \(problem)" }
        }
        return nil
    }

    /// The layout and manifest as they are, the name and paths unchecked: for `policy bundle inspect`, which shows an
    /// odd name and warns rather than refuse to show it.
    package static func parseLayout(_ bytes: [UInt8]) throws(BundleVerificationError) -> (bundle: PolicyBundle, signedCount: Int, signature: [UInt8], section: Range<Int>) {
        var reader = Reader(bytes: bytes)
        guard bytes.count >= magic.count + 2 + 64, Array(bytes[0..<magic.count]) == magic else {
            throw .malformed("not a Gatehouse policy bundle (magic)")
        }
        reader.offset = magic.count
        let version = Int(bytes[8]) << 8 | Int(bytes[9])
        reader.offset = 10
        // A newer layout may put anything after the version: read no further.
        if version > formatVersion { throw .newerFormatVersion(found: version, supported: formatVersion) }
        reader.end = bytes.count - 64
        let json = try reader.chunk("manifest")
        guard let manifest = try? JSONDecoder().decode(BundleManifest.self, from: Data(json)) else { throw .malformed("the manifest does not decode") }
        guard manifest.formatVersion == version else { throw .malformed("the manifest's format version differs from the header's") }
        let sectionStart = reader.offset
        let count = try reader.u32("file count")
        var files: [String: [UInt8]] = [:]
        for _ in 0..<count {
            guard let path = String(validating: try reader.chunk("file path"), as: UTF8.self) else { throw .malformed("a file path is not UTF-8") }
            let content = try reader.chunk("file bytes")
            guard files.updateValue(content, forKey: path) == nil else { throw .malformed("the file '\(path)' appears twice") }
        }
        guard reader.offset == reader.end else { throw .malformed("bytes after the last file") }
        return (PolicyBundle(manifest: manifest, files: files, bytes: bytes), reader.end, Array(bytes[reader.end...]), sectionStart..<reader.end)
    }

    /// Verifies a bundle against the pinned keys and the revision already held, refusing, in this order: bytes that
    /// are not a bundle, a newer format version, an unknown key, a bad signature, a content hash mismatch, a policy
    /// hash mismatch and a downgrade.
    public static func verify(_ bytes: [UInt8], trusting keys: [BundlePublicKey], heldRevision: UInt64? = nil)
        throws(BundleVerificationError) -> PolicyBundle
    {
        let (bundle, signedCount, signature, section) = try parse(bytes)
        let manifest = bundle.manifest
        guard let key = keys.first(where: { $0.keyID == manifest.keyID }) else { throw .unknownKey(keyID: manifest.keyID) }
        guard key.key.isValidSignature(signature, for: bytes[0..<signedCount]) else { throw .badSignature(keyID: manifest.keyID) }
        try checkHashes(bundle, bytes: bytes, section: section)
        if let heldRevision, manifest.revision < heldRevision { throw .downgrade(revision: manifest.revision, held: heldRevision) }
        return bundle
    }

    /// Reads a bundle and checks its hashes, not its signature: for tools that read a bundle without a key
    /// (`policy check`, `policy matrix`). An app decides only from a bundle `verify` accepted.
    public static func open(_ bytes: [UInt8]) throws(BundleVerificationError) -> PolicyBundle {
        let (bundle, _, _, section) = try parse(bytes)
        try checkHashes(bundle, bytes: bytes, section: section)
        return bundle
    }

    static func checkHashes(_ bundle: PolicyBundle, bytes: [UInt8], section: Range<Int>) throws(BundleVerificationError) {
        let manifest = bundle.manifest
        let actual = hex(SHA256.hash(data: bytes[section]))
        guard constantTimeEqual(actual, manifest.contentHash) else { throw .contentHashMismatch(expected: manifest.contentHash, actual: actual) }
        let policyHash = PolicyCompiler.contentHash(of: bundle.files.map { PolicyFileInput(path: $0.key, bytes: $0.value) }.sorted { $0.path < $1.path })
        guard constantTimeEqual(policyHash, manifest.policyHash) else { throw .policyHashMismatch(expected: manifest.policyHash, actual: policyHash) }
    }

    /// Compiles the bundle's files (as the server compiles its folder: same name, same relative paths, same hash).
    public func compile() -> PolicyLoadResult {
        PolicyCompiler.compile(name: manifest.name, files: files.map { PolicyFileInput(path: $0.key, bytes: $0.value) })
    }

    /// Writes the bundle's files under `directory` (created), each at its relative path, and nothing anywhere else.
    ///
    /// Each path is checked again (`problem(withPath:)`), each folder on the way is created one level at a time and
    /// must be a real folder (never a symbolic link), each destination is resolved and refused unless it lies inside
    /// `directory`, and no existing file is overwritten or followed.
    public func extract(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let root = directory.resolvingSymlinksInPath().standardizedFileURL
        for path in files.keys.sorted() {
            if let problem = Self.problem(withPath: path) {
                throw BundleVerificationError.malformed("the file path \(BundleManifest.printable(path)) \(problem)")
            }
            func outside() -> BundleVerificationError {
                .malformed("the file path \(BundleManifest.printable(path)) resolves outside the set's folder")
            }
            let components = path.split(separator: "/").map(String.init)
            var folder = root
            for component in components.dropLast() {
                folder = folder.appendingPathComponent(component, isDirectory: true)
                switch try? FileManager.default.attributesOfItem(atPath: folder.path)[.type] as? FileAttributeType {
                case .typeDirectory?: continue
                case nil: try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                default: throw outside()  // a symbolic link or a file where a folder should be
                }
            }
            let destination = folder.appendingPathComponent(components.last!)
            let resolved = destination.resolvingSymlinksInPath().standardizedFileURL.path
            guard resolved.hasPrefix(root.path.hasSuffix("/") ? root.path : root.path + "/") else { throw outside() }
            // Never through or over something already there (a link planted in the folder, a file twice).
            guard (try? FileManager.default.attributesOfItem(atPath: destination.path)) == nil else { throw outside() }
            try Data(files[path]!).write(to: destination, options: .withoutOverwriting)
        }
    }

    /// Unpacks the files into a new folder `set` inside a new folder `policy-bundle-<UUID>` under `parent` (the
    /// temporary folder by default), for tools that work on folders. The manifest's name is never part of a path.
    /// On any failure the new folder is removed before the error is thrown; otherwise the caller removes `cleanup`.
    public func unpack(under parent: URL = FileManager.default.temporaryDirectory) throws -> (folder: URL, cleanup: URL) {
        let base = parent.appendingPathComponent("policy-bundle-\(UUID().uuidString)", isDirectory: true)
        let folder = base.appendingPathComponent("set", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: false)
            try extract(to: folder)
        } catch {
            try? FileManager.default.removeItem(at: base)
            throw error
        }
        return (folder, base)
    }

    /// The strong HTTP entity tag `GET /v1/bundle` gives these bytes: SHA-256 in hex, quoted. A device computes it
    /// from the bundle it holds, so its `If-None-Match` survives a relaunch.
    public static func entityTag(of bytes: [UInt8]) -> String { "\"" + hex(SHA256.hash(data: bytes)) + "\"" }

    /// The total size of the files the bundle holds.
    public var payloadSize: Int { files.values.reduce(0) { $0 + $1.count } }
}

/// Equal strings compared without an early exit.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    guard x.count == y.count else { return false }
    var diff: UInt8 = 0
    for i in x.indices { diff |= x[i] ^ y[i] }
    return diff == 0
}

struct Reader {
    let bytes: [UInt8]
    var offset = 0
    var end = 0

    mutating func u32(_ what: String) throws(BundleVerificationError) -> Int {
        guard end - offset >= 4 else { throw .malformed("truncated at the \(what)") }
        let v = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        offset += 4
        return v
    }

    mutating func chunk(_ what: String) throws(BundleVerificationError) -> [UInt8] {
        let count = try u32(what)
        guard end - offset >= count else { throw .malformed("the \(what) runs past the end") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
}
