import Foundation
import PolicyCompiler
import PolicyEngine

/// A policy version a facade has decided with: its content hash, name, when it was loaded, its files.
public struct PolicyVersion: Sendable, Hashable {
    /// The compiled policy's content hash (`CompiledPolicy.contentHash`): what `Gatehouse-Policy` names.
    public var hash: String
    /// The policy set's name.
    public var name: String
    /// When this version was loaded.
    public var loadedAt: Date
    /// The files it was compiled from (relative to its folder), sorted; empty for a policy compiled elsewhere.
    public var files: [String]
    /// The folder as it looked just before this version was read.
    public var fingerprint: FolderFingerprint

    /// A version; `fingerprint` empty for a policy not read from a watched folder.
    public init(hash: String, name: String, loadedAt: Date, files: [String] = [], fingerprint: FolderFingerprint = FolderFingerprint(entries: [])) {
        self.hash = hash
        self.name = name
        self.loadedAt = loadedAt
        self.files = files
        self.fingerprint = fingerprint
    }

    /// The version of `policy`, loaded now (its hash and name; the files when the caller knows them).
    public init(of policy: CompiledPolicy, loadedAt: Date = Date(), files: [String] = [], fingerprint: FolderFingerprint = FolderFingerprint(entries: [])) {
        self.init(hash: policy.contentHash, name: policy.name, loadedAt: loadedAt, files: files, fingerprint: fingerprint)
    }
}

/// The policy deciding now and its version, held and swapped together: whoever reads one reads the other of the
/// same load, so an answer's `Gatehouse-Policy` header always names the policy that decided it.
public struct ActivePolicy: Sendable {
    /// The compiled policy.
    public let policy: CompiledPolicy
    /// Its version (hash, name, load time, files); made only by `GatehouseService.install`, so it describes `policy`.
    public let version: PolicyVersion
}

/// What a look at the policy folder sees: each file's path, size, modification time and inode, so an
/// editor's in-place write and a rename over the file are both noticed.
public struct FolderFingerprint: Sendable, Hashable {
    /// One line per policy file: path, size, modification time, inode (or `missing`).
    public var entries: [String]

    /// A fingerprint of the given entries.
    public init(entries: [String]) { self.entries = entries }

    /// The folder's policy files as they are now.
    public static func of(_ directory: String) -> FolderFingerprint {
        FolderFingerprint(
            entries: PolicyCompiler.policyFiles(in: directory).map { path in
                var st = stat()
                guard stat(path, &st) == 0 else { return path + " missing" }
                #if os(Linux)
                let modified = st.st_mtim
                #else
                let modified = st.st_mtimespec
                #endif
                return "\(path) \(st.st_size) \(modified.tv_sec).\(modified.tv_nsec) \(st.st_ino)"
            })
    }
}
