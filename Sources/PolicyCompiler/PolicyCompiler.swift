import Crypto
import Foundation
import PolicyEngine
import PolicyModel
import PolicySyntax

/// The result of loading a policy set: a compiled policy only when there were no errors, and every diagnostic.
public struct PolicyLoadResult: Sendable {
    /// nil whenever `diagnostics` holds an error: a set that fails to load never yields a partial engine.
    public let policy: CompiledPolicy?
    /// Every error, warning and note, in the order found.
    public let diagnostics: [Diagnostic]
    /// The files read, by path, so diagnostics can quote their lines.
    public let sources: [String: SourceFile]
    package let declarations: PolicyDeclarations
}

/// One policy file's bytes and the path to report it under.
public struct PolicyFileInput: Sendable {
    /// The path diagnostics name the file by.
    public var path: String
    /// The file's bytes.
    public var bytes: [UInt8]
    /// A file from its path and bytes.
    public init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
    }
}

/// Compiles policy sets: decode, resolve, build, each a named pass; all errors are reported together.
public enum PolicyCompiler {
    /// Compiles a set from file contents (no I/O): the form tests and hot reload use.
    public static func compile(name: String, files: [PolicyFileInput], limits: YAMLLimits = YAMLLimits()) -> PolicyLoadResult {
        var diagnostics: [Diagnostic] = []
        var sources: [String: SourceFile] = [:]
        var decode = DecodePass()
        let ordered = files.sorted { $0.path < $1.path }
        if ordered.isEmpty {
            diagnostics.append(Diagnostic(
                .error, .emptyPolicySet, "policy set '\(name)' has no .yaml files", at: nil,
                help: ["add at least one .yaml file declaring resources and actions"]))
        }
        var unparsed = false
        for file in ordered {
            let (source, root, problems) = YAMLLoader.load(bytes: file.bytes, path: file.path, limits: limits)
            if let source { sources[file.path] = source }
            diagnostics += problems
            if let root { decode.decode(file: root) } else { unparsed = true }
        }
        diagnostics += decode.reader.diagnostics.diagnostics
        let declarations = decode.declarations
        if unparsed {
            // A file that does not parse declares nothing, so every reference into it from the other files would be
            // reported as unknown: errors about the wrong place. Report what the files say and stop, as a compiler
            // stops after a syntax error; the references are checked once every file parses.
            let sorted = diagnostics.uniqued().sortedForDisplay()
            return PolicyLoadResult(policy: nil, diagnostics: sorted, sources: sources, declarations: declarations)
        }
        if !diagnostics.hasErrors, declarations.resourceTypes.isEmpty {
            diagnostics.append(Diagnostic(
                .error, .noResources, "policy set '\(name)' declares no resource types, so every request would be denied",
                at: ordered.first.map { SourceLocation(file: $0.path, line: 1, column: 1) }))
        } else if !diagnostics.hasErrors, declarations.resourceTypes.allSatisfy({ $0.actions.isEmpty }) {
            let names = declarations.resourceTypes.map { "'\($0.id.value)'" }.joined(separator: ", ")
            diagnostics.append(Diagnostic(
                .error, .noActions, "policy set '\(name)' declares no action on its resource types (\(names)), so every request would be denied",
                at: declarations.resourceTypes.first?.id.location))
        }
        var resolve = ResolvePass(declarations)
        resolve.run()
        diagnostics += resolve.diagnostics.diagnostics
        var build = BuildPass(declarations, symbols: resolve.symbols)
        let policy = build.run(name: name, contentHash: contentHash(of: ordered))
        diagnostics += build.diagnostics.diagnostics
        let sorted = diagnostics.uniqued().sortedForDisplay()
        return PolicyLoadResult(policy: sorted.hasErrors ? nil : policy, diagnostics: sorted, sources: sources, declarations: declarations)
    }

    /// A set that declares nothing, so it denies every request (`default_deny`): what `policy diff --base REV`
    /// compares against when the folder did not exist at REV, so everything the new set allows counts as widening.
    public static func emptySet(name: String) -> PolicyLoadResult {
        let declarations = DecodePass().declarations
        var resolve = ResolvePass(declarations)
        resolve.run()
        var build = BuildPass(declarations, symbols: resolve.symbols)
        let policy = build.run(name: name, contentHash: contentHash(of: []))
        return PolicyLoadResult(policy: policy, diagnostics: [], sources: [:], declarations: declarations)
    }

    /// Reads every `.yaml`/`.yml` file under `directory` (recursively, sorted) and compiles them as one set.
    public static func load(directory: String, limits: YAMLLimits = YAMLLimits()) -> PolicyLoadResult {
        load(directory: directory, limits: limits, relativePaths: false)
    }

    /// Reads every `.yaml`/`.yml` file under `directory` (recursively, sorted) and compiles them as one set.
    ///
    /// A folder under `directory` that cannot be listed is an error, not a folder skipped: a set loaded without
    /// some of its files could allow what they deny. With `relativePaths` every location and diagnostic names
    /// its file relative to `directory` (the server's answers: no absolute path of the host).
    public static func load(directory: String, limits: YAMLLimits = YAMLLimits(), relativePaths: Bool) -> PolicyLoadResult {
        let name = URL(fileURLWithPath: directory).standardizedFileURL.lastPathComponent
        var files: [PolicyFileInput] = []
        var problems: [Diagnostic] = []
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        func shown(_ path: String) -> String { relativePaths && path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path }
        let listing = policyFileListing(in: directory)
        for folder in listing.unlistable {
            problems.append(Diagnostic(.error, .unreadableFile, "cannot list the folder '\(shown(folder))': its files would be left out", at: nil))
        }
        for path in listing.files {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                problems.append(Diagnostic(.error, .unreadableFile, "cannot read '\(shown(path))'", at: nil))
                continue
            }
            defer { try? handle.close() }
            // Read one byte past the cap so an oversized file is reported, without reading all of it.
            let data = (try? handle.read(upToCount: limits.maxFileBytes + 1)) ?? Data()
            files.append(PolicyFileInput(path: shown(path), bytes: [UInt8](data)))
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            problems.append(Diagnostic(.error, .notADirectory, "'\(directory)' is not a policy set folder", at: nil))
            return PolicyLoadResult(policy: nil, diagnostics: problems, sources: [:], declarations: PolicyDeclarations())
        }
        let result = compile(name: name, files: files, limits: limits)
        if problems.isEmpty { return result }
        return PolicyLoadResult(policy: nil, diagnostics: problems + result.diagnostics, sources: result.sources, declarations: result.declarations)
    }

    /// Policy files under `directory`, recursively, in sorted order; hidden entries are skipped.
    public static func policyFiles(in directory: String) -> [String] {
        policyFileListing(in: directory).files
    }

    /// Policy files under `directory` (as `policyFiles(in:)`), and the folders under it that could not be listed.
    public static func policyFileListing(in directory: String) -> (files: [String], unlistable: [String]) {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: directory) else {
            var isDirectory: ObjCBool = false
            let exists = fm.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue
            return ([], exists ? [directory] : [])
        }
        var files: [String] = []
        var unlistable: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                let inner = policyFileListing(in: path)
                files += inner.files
                unlistable += inner.unlistable
            } else if name.hasSuffix(".yaml") || name.hasSuffix(".yml") {
                files.append(path)
            }
        }
        return (files, unlistable)
    }

    /// The folders to check for `policy check DIR`: DIR itself when it holds policy files directly, else each subfolder that does.
    public static func policySets(under directory: String) -> [String] {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: directory) else { return [directory] }
        if names.contains(where: { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }) { return [directory] }
        let subfolders = names.sorted().filter { name in
            var isDirectory: ObjCBool = false
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            return !name.hasPrefix(".") && fm.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
                && !policyFiles(in: path).isEmpty
        }
        if subfolders.isEmpty { return [directory] }
        return subfolders.map { directory.hasSuffix("/") ? directory + $0 : directory + "/" + $0 }
    }

    /// SHA-256 over each file's name (relative to the set) and bytes, in sorted order.
    package static func contentHash(of files: [PolicyFileInput]) -> String {
        let prefix = commonDirectoryPrefix(files.map(\.path))
        var hasher = SHA256()
        for file in files {
            let relative = String(file.path.dropFirst(prefix.count))
            hasher.update(data: Array("\(relative.utf8.count):\(relative)\(file.bytes.count):".utf8))
            hasher.update(data: file.bytes)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    private static func commonDirectoryPrefix(_ paths: [String]) -> String {
        guard let first = paths.first else { return "" }
        var prefix = String(first[..<(first.lastIndex(of: "/").map { first.index(after: $0) } ?? first.startIndex)])
        for path in paths.dropFirst() where !path.hasPrefix(prefix) {
            while !prefix.isEmpty, !path.hasPrefix(prefix) {
                prefix.removeLast()
                if let slash = prefix.lastIndex(of: "/") { prefix = String(prefix[...slash]) } else { prefix = "" }
            }
        }
        return prefix
    }
}

extension Array where Element == Diagnostic {
    func uniqued() -> [Diagnostic] {
        var seen = Set<String>()
        return filter { seen.insert("\($0.code)|\($0.message)|\($0.location?.description ?? "")").inserted }
    }
}
