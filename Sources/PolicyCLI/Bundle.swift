import ArgumentParser
import Foundation
import PolicyBundle
import PolicyCompiler

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make an Ed25519 key to sign policy bundles with; print its public key.",
        discussion: """
            Writes the private key to KEYFILE (mode 0600; an existing file is never overwritten) and prints the \
            public key (base64) on standard output: pin it in apps and pass it to policy bundle verify. See \
            docs/bundles.md.

            Exit codes: 0 written; 73 the file exists or cannot be created.
            """)

    @Option(help: ArgumentHelp("Where to write the private key.", valueName: "KEYFILE"))
    var out: String

    func run() throws {
        let key = BundleSigningKey()
        let fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            writeError("error: cannot create '\(out)': \(String(cString: strerror(errno))) (an existing key file is never overwritten)")
            throw ExitCode(73)
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try handle.write(contentsOf: Data(key.fileText.utf8))
        try handle.close()
        print(key.publicKey.base64)
        writeError("wrote the private key to \(out) (mode 0600); key id \(key.publicKey.keyID)")
    }
}

struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Build, verify and inspect signed policy bundles (one file an app decides from offline).",
        discussion: "A bundle holds a policy set's files, a manifest and an Ed25519 signature. See docs/bundles.md.",
        subcommands: [BundleBuild.self, BundleVerify.self, BundleInspect.self])
}

struct BundleBuild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Build a signed bundle of a policy set folder.",
        discussion: """
            The same folder, key, creation time and revision give the same bytes. The creation time is --created, \
            else $SOURCE_DATE_EPOCH, else now; the revision defaults to the creation time in seconds since 1970.

            Exit codes: 0 written; 1 the set does not compile; 64 usage error; 73 the file cannot be written.
            """)

    @Argument(help: "The policy set folder.")
    var directory: String

    @Option(help: ArgumentHelp("The private key file policy keygen wrote.", valueName: "KEYFILE"))
    var key: String

    @Option(name: .short, help: ArgumentHelp("Where to write the bundle.", valueName: "FILE"))
    var o: String

    @Option(help: ArgumentHelp("The bundle's revision; devices refuse a lower one than they hold.", valueName: "N"))
    var revision: UInt64?

    @Option(help: ArgumentHelp("The creation time, ISO 8601 (2026-11-25T12:00:00Z).", valueName: "TIME"))
    var created: String?

    func run() throws {
        let signingKey = try readSigningKey(key)
        let createdAt = try creationTime()
        let bundle: PolicyBundle
        do {
            bundle = try PolicyBundle.build(
                directory: directory, key: signingKey, createdAt: createdAt, revision: revision ?? UInt64(createdAt.timeIntervalSince1970))
        } catch {
            writeError("error: \(error)")
            throw Exit.policyErrors
        }
        do { try Data(bundle.bytes).write(to: URL(fileURLWithPath: o), options: .atomic) } catch {
            writeError("error: cannot write '\(o)': \(error.localizedDescription)")
            throw ExitCode(73)
        }
        let m = bundle.manifest
        print("wrote \(o): \(m.name) revision \(m.revision), \(bundle.bytes.count) bytes, policy \(m.policyHash), key id \(m.keyID)")
    }

    func creationTime() throws -> Date {
        if let created {
            guard let date = ISO8601DateFormatter().date(from: created) else {
                throw ValidationError("--created must be an ISO 8601 time such as 2026-11-25T12:00:00Z, not '\(created)'")
            }
            return date
        }
        if let epoch = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"] {
            guard let seconds = TimeInterval(epoch) else { throw ValidationError("SOURCE_DATE_EPOCH must be seconds since 1970, not '\(epoch)'") }
            return Date(timeIntervalSince1970: seconds)
        }
        return Date()
    }
}

struct BundleVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a bundle's signature, hashes, format version and (with --held-revision) revision.",
        discussion: """
            KEY is the public key policy keygen printed (base64), or a file holding it.

            Exit codes: 0 the bundle verifies; 2 it is refused (the line says which check failed: malformed, \
            format_version, unknown_key, signature, content_hash, policy_hash or downgrade); 64 usage error.
            """)

    @Argument(help: "The bundle file.")
    var file: String

    @Option(help: ArgumentHelp("The pinned public key (base64), or a file holding it.", valueName: "KEY"))
    var publicKey: String

    @Option(help: ArgumentHelp("Refuse a bundle whose revision is lower than N (a downgrade).", valueName: "N"))
    var heldRevision: UInt64?

    func run() throws {
        let key = try readPublicKey(publicKey)
        let bytes = try readBundleFile(file)
        do {
            let bundle = try PolicyBundle.verify(bytes, trusting: [key], heldRevision: heldRevision)
            let m = bundle.manifest
            print("ok: \(m.name) revision \(m.revision), policy \(m.policyHash), signed by key id \(m.keyID)")
        } catch {
            writeError("error: bundle refused (\(error.code)): \(error)")
            throw Exit.failingTests
        }
    }
}

enum InspectFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

struct BundleInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print a bundle's manifest and files (read, not verified: use policy bundle verify).",
        discussion: "Exit codes: 0 printed; 2 the file is not a bundle; 64 usage error.")

    @Argument(help: "The bundle file.")
    var file: String

    @Option(help: "Output format: text or json.")
    var format: InspectFormat = .text

    func run() throws {
        let bundle: PolicyBundle
        // The layout only: a bundle with an odd name is shown (and warned about) so its author can see what it holds.
        do { bundle = try PolicyBundle.parseLayout(try readBundleFile(file)).bundle } catch let error as BundleVerificationError {
            writeError("error: \(error)")
            throw Exit.failingTests
        }
        let m = bundle.manifest
        if let problem = BundleManifest.problem(withName: m.name) {
            writeError(
                "warning: the manifest's name \(BundleManifest.printable(m.name)) \(problem); verify, check, matrix and apps refuse this bundle")
        }
        for path in bundle.files.keys.sorted() {
            if let problem = PolicyBundle.problem(withPath: path) {
                writeError("warning: the file path \(BundleManifest.printable(path)) \(problem); verify, check, matrix and apps refuse this bundle")
            }
        }
        let paths = bundle.files.keys.sorted()
        switch format {
        case .json:
            struct File: Encodable { var path: String; var bytes: Int }
            struct Document: Encodable { var manifest: BundleManifest; var files: [File]; var bytes: Int }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            let doc = Document(manifest: m, files: paths.map { File(path: $0, bytes: bundle.files[$0]!.count) }, bytes: bundle.bytes.count)
            print(String(decoding: try encoder.encode(doc), as: UTF8.self))
        case .text:
            print("""
                name            \(shown(m.name))
                revision        \(m.revision)
                created         \(m.createdAt)
                policy hash     \(m.policyHash)
                content hash    \(m.contentHash)
                format version  \(m.formatVersion)
                key id          \(m.keyID)
                size            \(bundle.bytes.count) bytes (\(bundle.payloadSize) of policy files)
                files           \(paths.count)
                """)
            for path in paths { print("  \(shown(path))  \(bundle.files[path]!.count) bytes") }
        }
    }
}

/// A name or path as it is when it is a plain one, else quoted with its unprintable characters escaped.
func shown(_ text: String) -> String {
    BundleManifest.problem(withName: text) == nil || PolicyBundle.problem(withPath: text) == nil ? text : BundleManifest.printable(text)
}

func readSigningKey(_ path: String) throws -> BundleSigningKey {
    guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("--key: cannot read '\(path)'") }
    if let exposure = BundleSigningKey.exposure(ofKeyFile: path) { writeError("warning: \(exposure)") }
    // The key's text is never echoed: the error names the file only.
    do { return try BundleSigningKey(fileText: String(decoding: data, as: UTF8.self)) } catch {
        throw ValidationError("--key: '\(path)' is \(error)")
    }
}

func readBundleFile(_ path: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read '\(path)'") }
    return [UInt8](data)
}

/// Whether `path` is a file (not a folder), so `check` and `matrix` read it as a bundle.
func isBundleFile(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
}

/// `--public-key` of the commands that read a bundle file in place of a folder (`check`, `matrix`): the key its
/// signature is verified with; without it the bundle is read unverified (`openBundle`).
struct BundleKeyOption: ParsableArguments {
    @Option(help: ArgumentHelp("Verify a bundle file's signature with this public key (base64, or a file holding it) before reading it.", valueName: "KEY"))
    var publicKey: String?
}

/// A bundle's files unpacked into a new temporary folder of a fixed name (`PolicyBundle.unpack`: the manifest's name
/// is only a label), for the folder-based tools; the caller removes `cleanup`, and a failure removes it first.
func unpackBundle(_ path: String, publicKey: String?) throws -> (folder: String, cleanup: URL) {
    let bundle = try openBundle(path, publicKey: publicKey)
    do {
        let unpacked = try bundle.unpack()
        return (unpacked.folder.path, unpacked.cleanup)
    } catch {
        writeError("error: \(path): cannot unpack: \(error)")
        throw Exit.policyErrors
    }
}

/// A bundle file read, exit 1 naming what failed: verified against `publicKey` (base64, or a file holding it) when
/// one is given, else its hashes checked and "unverified bundle" said on standard error (the signature is not).
func openBundle(_ path: String, publicKey: String?) throws -> PolicyBundle {
    let bytes = try readBundleFile(path)
    guard let publicKey else {
        do {
            let bundle = try PolicyBundle.open(bytes)
            writeError("note: \(path): unverified bundle (its hashes are checked, not its signature: pass --public-key to verify it)")
            return bundle
        } catch {
            writeError("error: \(path): \(error)")
            throw Exit.policyErrors
        }
    }
    let key = try readPublicKey(publicKey)
    do { return try PolicyBundle.verify(bytes, trusting: [key]) } catch {
        writeError("error: \(path): bundle refused (\(error.code)): \(error)")
        throw Exit.policyErrors
    }
}

/// A public key given as base64 or as a file holding it (`--public-key`).
func readPublicKey(_ value: String) throws -> BundlePublicKey {
    let text = FileManager.default.fileExists(atPath: value)
        ? (FileManager.default.contents(atPath: value).map { String(decoding: $0, as: UTF8.self) } ?? "") : value
    do { return try BundlePublicKey(base64: text) } catch { throw ValidationError("--public-key: \(error)") }
}
