import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification
import Subprocess

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show which decisions change between two versions of a policy set.",
        discussion: """
            Compares OLD and NEW over every request of the space both sets span (tiers, lapsed and signed-out \
            subjects, standings, app roles, auth methods and freshness, boundary values of limits and conditions), \
            and groups the changed requests: "role editor loses 'delete' on project". With --base REV, the folder \
            as committed at REV is OLD and the working tree is NEW; a folder missing at REV is compared with an \
            empty set.

              policy diff OLD_DIR NEW_DIR
              policy diff --base origin/main policies/research-crawler

            Exit codes: 0 compared (changes or not); 1 a set does not load; 2 --fail-on-widening and some deny \
            became an allow; 64 usage error.
            """)

    @Argument(help: "OLD and NEW policy set folders; with --base, the one folder to compare with its committed version.")
    var folders: [String]

    @Option(help: "Compare the folder in the working tree with the same folder at this git revision (read with git, no checkout).")
    var base: String?

    @Flag(help: "Exit 2 when any request that was denied becomes allowed.")
    var failOnWidening = false

    @Option(help: "Output format: text, json or markdown (a pull-request comment).")
    var format: OutputFormat = .text

    func validate() throws {
        if base != nil, folders.count != 1 { throw ValidationError("with --base, give exactly one policy set folder") }
        if base == nil, folders.count != 2 { throw ValidationError("give OLD and NEW policy set folders, or --base REV and one folder") }
        if format == .github { throw ValidationError("diff writes text, json or markdown") }
    }

    func run() async throws {
        let (oldName, oldResult, newName, newResult): (String, PolicyLoadResult, String, PolicyLoadResult)
        if let base {
            let folder = folders[0]
            (oldName, newName) = ("\(base):\(folder)", folder)
            oldResult = try await GitRevision.load(folder: folder, revision: base)
            newResult = PolicyCompiler.load(directory: folder)
        } else {
            (oldName, newName) = (folders[0], folders[1])
            oldResult = PolicyCompiler.load(directory: folders[0])
            newResult = PolicyCompiler.load(directory: folders[1])
        }
        var failed = false
        for (name, result) in [(oldName, oldResult), (newName, newResult)] where result.policy == nil {
            let renderer = DiagnosticRenderer(sources: result.sources)
            for d in result.diagnostics where d.severity == .error { writeError(renderer.text(d)) }
            writeError("\(name): does not load")
            failed = true
        }
        guard !failed, let old = oldResult.policy, let new = newResult.policy else { throw Exit.policyErrors }
        let diff = PolicyDiffer.diff(old: old, new: new)
        switch format {
        case .json: print(DiffRenderer.json(diff, old: oldName, new: newName).rendered(pretty: true))
        case .markdown: print(DiffRenderer.markdown(diff, old: oldName, new: newName))
        default: print(DiffRenderer.text(diff, old: oldName, new: newName))
        }
        if failOnWidening, diff.widening > 0 { throw Exit.failingTests }
    }
}

/// Reads a policy set folder as it was at a git revision, with `git ls-tree` and `git show`: no checkout.
enum GitRevision {
    static func load(folder: String, revision: String) async throws -> PolicyLoadResult {
        guard FileManager.default.fileExists(atPath: folder) else { throw ValidationError("'\(folder)' does not exist") }
        guard !revision.hasPrefix("-") else { throw ValidationError("'\(revision)' is not a revision") }
        let listing = try await git(["ls-tree", "-r", "--name-only", revision, "--", "."], in: folder)
        let names = String(decoding: listing, as: UTF8.self).split(separator: "\n").map(String.init)
            .filter { ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) && !$0.split(separator: "/").contains { $0.hasPrefix(".") } }
        let setName = URL(fileURLWithPath: folder).standardizedFileURL.lastPathComponent
        guard !names.isEmpty else {
            // A set this change adds: the base had nothing here, and nothing was allowed.
            writeError("note: '\(folder)' has no policy files at \(revision): compared against an empty set, so every request it allows is widening")
            return PolicyCompiler.emptySet(name: setName)
        }
        var files: [PolicyFileInput] = []
        for name in names {
            let bytes = try await git(["show", "\(revision):./\(name)"], in: folder)
            files.append(PolicyFileInput(path: "\(revision):\(folder)/\(name)", bytes: bytes))
        }
        return PolicyCompiler.compile(name: setName, files: files)
    }

    /// git's standard output; found on the PATH, spawned by swift-subprocess (posix_spawn), not Foundation's `Process`,
    /// whose `run()` on Linux over-reads `/proc/self/fd` entries (docs/testing.md).
    private static func git(_ arguments: [String], in directory: String) async throws -> [UInt8] {
        let result: ExecutionResult<Void, BytesOutput, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .name("git"), arguments: Arguments(["-C", directory] + arguments), output: .bytes(limit: 256 << 20), error: .string(limit: 1 << 20))
        } catch {
            throw ValidationError("cannot run git: \(error)")
        }
        guard result.terminationStatus.isSuccess else {
            throw ValidationError("git \(arguments[0]) failed: \(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return result.standardOutput
    }
}
