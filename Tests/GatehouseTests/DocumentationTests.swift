import Foundation
import Testing
import GatehouseTestSupport

/// The documentation check of issue 16: every public symbol of the documented modules has a doc comment, and
/// DocC builds their combined documentation (Gatehouse.docc's articles as the landing page) without a warning.
///
/// Both halves read the modules this `swift test` has just built: `swift-symbolgraph-extract` takes the symbol
/// graphs from the `.swiftmodule`, `.swiftdoc` and `.swiftsourceinfo` files in the build's `Modules` folder, and
/// `docc convert` runs on them, module by module, the way the swift-docc-plugin's combined build does. So the check
/// costs no second compile and runs no `swift package`, which would wait on the `.build` lock `swift test` holds.
/// `scripts/check-docs.sh` runs this suite; `docs/testing.md` says what it checks.
@Suite(.startsServers) struct DocumentationTests {
    /// The documented modules, each after the modules it links to (DocC resolves a link to a symbol of another
    /// module through that module's archive, passed as `--dependency`).
    static let modules: [(name: String, dependencies: [String])] = [
        ("PolicyModel", []),
        ("Identity", ["PolicyModel"]),
        ("PolicyEngine", ["PolicyModel"]),
        ("PolicyCompiler", ["PolicyModel", "PolicyEngine"]),
        ("Gatehouse", ["PolicyModel", "PolicyCompiler", "PolicyEngine", "Identity"]),
        // The PostgreSQL store: a library product of its own.
        ("IdentityPostgres", ["Identity"]),
        // The HTTP client for apps: a library product of its own, with the article "Using Gatehouse from an iOS app".
        ("GatehouseClient", ["PolicyModel"]),
    ]

    /// Members that implement a standard protocol requirement carry the protocol's documentation.
    static let witnesses: Set<String> = [
        "==(_:_:)", "<(_:_:)", "hash(into:)", "description", "debugDescription", "init(from:)", "encode(to:)",
    ]

    @Test(.disabled(if: DocTools.unavailable != nil && !DocTools.isCI, "\(DocTools.unavailable ?? ""): the documentation check did not run"))
    func everyPublicSymbolHasADocComment() async throws {
        let tools = try DocTools.require()
        let folder = try Scratch()
        var missing: Set<String> = []
        for (module, _) in Self.modules {
            let graphs = try await tools.extractSymbolGraphs(
                module, into: folder.url.appendingPathComponent(module), cache: folder.url.appendingPathComponent("module-cache"), documentation: false)
            for graph in graphs {
                missing.formUnion(try Self.undocumented(in: graph, module: module))
            }
        }
        if !missing.isEmpty {
            Issue.record("\(missing.count) public symbols without a doc comment:\n\(missing.sorted().joined(separator: "\n"))")
        }
    }

    @Test(.disabled(if: DocTools.unavailable != nil && !DocTools.isCI, "\(DocTools.unavailable ?? ""): the documentation check did not run"))
    func theCombinedDocumentationBuildsWithoutWarnings() async throws {
        let tools = try DocTools.require()
        let folder = try Scratch()
        var archives: [String: URL] = [:]
        for (module, dependencies) in Self.modules {
            let graphs = folder.url.appendingPathComponent("graphs/\(module)")
            _ = try await tools.extractSymbolGraphs(module, into: graphs, cache: folder.url.appendingPathComponent("module-cache"), documentation: true)
            let archive = folder.url.appendingPathComponent("\(module).doccarchive")
            let catalog = DocTools.root.appendingPathComponent("Sources/\(module)/\(module).docc")
            var arguments = FileManager.default.fileExists(atPath: catalog.path) ? [catalog.path] : []
            arguments += [
                "--warnings-as-errors", "--fallback-display-name", module, "--fallback-bundle-identifier", module,
                "--additional-symbol-graph-dir", graphs.path, "--output-path", archive.path, "--enable-experimental-external-link-support",
            ]
            for dependency in dependencies {
                arguments += ["--dependency", try #require(archives[dependency], "\(dependency) is converted before \(module)").path]
            }
            let run = try await DocTools.run(tools.docc, ["convert"] + arguments)
            guard run.status == 0, !run.reportsProblems else {
                Issue.record("docc convert \(module) (exit \(run.status)):\n\(run.output)")
                return
            }
            archives[module] = archive
        }
        let merged = folder.url.appendingPathComponent("Gatehouse-combined.doccarchive")
        let merge = try await DocTools.run(
            tools.docc,
            ["merge"] + Self.modules.compactMap { archives[$0.name]?.path } + [
                "--output-path", merged.path, "--synthesized-landing-page-name", "Gatehouse", "--synthesized-landing-page-kind", "Package",
            ])
        #expect(merge.status == 0 && !merge.reportsProblems, "docc merge (exit \(merge.status)):\n\(merge.output)")
    }

    /// `file:line: Module.path (kind) has no doc comment` for each public symbol of `graph` that needs one and has none.
    static func undocumented(in graph: URL, module: String) throws -> [String] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: graph)) as? [String: Any]
        let symbols = try #require(json?["symbols"] as? [[String: Any]], "\(graph.lastPathComponent) has no symbols array")
        var missing: [String] = []
        for symbol in symbols {
            let names = symbol["names"] as? [String: Any]
            let title = names?["title"] as? String ?? ""
            let path = symbol["pathComponents"] as? [String] ?? []
            let kind = symbol["kind"] as? [String: Any]
            if symbol["docComment"] != nil || symbol["sourceOrigin"] != nil || witnesses.contains(title) { continue }
            // DiagnosticCode's cases are documented by their `summary`, which docs/cli.md's table is generated from.
            if kind?["identifier"] as? String == "swift.enum.case", path.first == "DiagnosticCode" { continue }
            let location = symbol["location"] as? [String: Any]
            let file = (location?["uri"] as? String ?? "").components(separatedBy: "/Sources/").last ?? "?"
            let line = ((location?["position"] as? [String: Any])?["line"] as? Int ?? -1) + 1
            missing.append("Sources/\(file):\(line): \(module).\(path.joined(separator: ".")) (\(kind?["displayName"] as? String ?? "?")) has no doc comment")
        }
        return missing
    }
}

/// The toolchain's documentation tools and the build this test run uses.
struct DocTools {
    static let root = Repository.root
    static let isCI = ProcessInfo.processInfo.environment["CI"]?.lowercased() == "true"

    let extractor: URL
    let docc: URL
    /// The build's folder of `.swiftmodule` files (`.build/<triple>/debug/Modules`).
    let modules: URL
    /// `-target` and the module maps of the C modules that the documented modules import through their dependencies.
    let compilerArguments: [String]

    /// Why the check cannot run here (a tool or the build's modules not found), or nil when it can.
    static let unavailable: String? = {
        do {
            _ = try find()
            return nil
        } catch {
            return "\(error)"
        }
    }()

    /// The tools, or an error that says what is missing; under `CI=true` a missing tool fails the test.
    static func require() throws -> DocTools {
        do {
            return try find()
        } catch {
            Issue.record("CI=true and the documentation check cannot run: \(error)")
            throw error
        }
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    static func find() throws -> DocTools {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        func tool(_ name: String) throws -> URL {
            for folder in path where FileManager.default.isExecutableFile(atPath: folder + "/" + name) {
                return URL(fileURLWithPath: folder + "/" + name)
            }
            throw Missing(description: "\(name) is not on PATH (it ships with the Swift toolchain, beside swift)")
        }
        let extractor = try tool("swift-symbolgraph-extract")
        let docc = try tool("docc")
        // The test binary lives in the build folder (`.build/<triple>/debug/GatehousePackageTests.xctest`).
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var build = binary.deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: build.appendingPathComponent("Modules/Gatehouse.swiftmodule").path) {
            guard build.pathComponents.count > 1 else {
                throw Missing(description: "no Modules/Gatehouse.swiftmodule in a folder above the test binary \(binary.path)")
            }
            build = build.deletingLastPathComponent()
        }
        // Module maps: the dependencies' own (in the scratch folder's `checkouts`) and those SwiftPM wrote for C targets.
        var scratch = build
        while !FileManager.default.fileExists(atPath: scratch.appendingPathComponent("checkouts").path), scratch.pathComponents.count > 1 {
            scratch = scratch.deletingLastPathComponent()
        }
        var maps = moduleMaps(under: scratch.appendingPathComponent("checkouts"))
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: build.path)) ?? [] where entry.hasSuffix(".build") {
            let map = build.appendingPathComponent(entry).appendingPathComponent("module.modulemap")
            if FileManager.default.fileExists(atPath: map.path) { maps.append(map.path) }
        }
        var arguments: [String] = []
        let triple = build.deletingLastPathComponent().lastPathComponent
        if triple.split(separator: "-").count >= 3 { arguments += ["-target", triple] }
        for map in maps.sorted() { arguments += ["-Xcc", "-fmodule-map-file=" + map] }
        return DocTools(extractor: extractor, docc: docc, modules: build.appendingPathComponent("Modules"), compilerArguments: arguments)
    }

    /// Every `module.modulemap` under the checkouts' `Sources` folders.
    static func moduleMaps(under checkouts: URL) -> [String] {
        guard let walk = FileManager.default.enumerator(atPath: checkouts.path) else { return [] }
        var maps: [String] = []
        while let relative = walk.nextObject() as? String {
            if relative.hasSuffix("/module.modulemap"), relative.contains("/Sources/") { maps.append(checkouts.path + "/" + relative) }
        }
        return maps
    }

    /// The public symbol graphs of `module` (its own file and one per extended module), written into `folder`;
    /// `cache` keeps the C modules compiled for one module for the next. For the doc-comment check synthesized
    /// members are left out; for DocC the options are the plugin's (synthesized members, inherited docs,
    /// extension blocks).
    func extractSymbolGraphs(_ module: String, into folder: URL, cache: URL, documentation: Bool) async throws -> [URL] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var arguments = [
            "-module-name", module, "-I", modules.path, "-module-cache-path", cache.path,
            "-minimum-access-level", "public", "-output-dir", folder.path,
        ]
        arguments += documentation ? ["-emit-extension-block-symbols"] : ["-skip-synthesized-members"]
        let run = try await Self.run(extractor, arguments + compilerArguments)
        guard run.status == 0 else { throw Missing(description: "swift-symbolgraph-extract \(module) failed (exit \(run.status)):\n\(run.output)") }
        let graphs = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasSuffix(".symbols.json") }
        guard graphs.contains(where: { $0.lastPathComponent == "\(module).symbols.json" }) else {
            throw Missing(description: "swift-symbolgraph-extract wrote no \(module).symbols.json:\n\(run.output)")
        }
        return graphs
    }

    struct Run {
        var status: Int32
        var output: String
        /// Whether the output names a warning or an error (DocC prints both on standard error).
        var reportsProblems: Bool { output.contains("warning:") || output.contains("error:") }
    }

    /// How long one tool may run before it is stopped (the slowest, the DocC merge, took ~2 minutes on two busy cores).
    static let timeLimit = 600

    /// Runs `tool` to its end, standard output and error together; bounded: after `timeLimit` seconds it is
    /// stopped and the run reports that (so a hung `docc` fails the test instead of hanging the suite).
    static func run(_ tool: URL, _ arguments: [String]) async throws -> Run {
        let run = try await Program(tool, arguments).run(errors: .mergedIntoOutput, timeLimit: .seconds(timeLimit))
        var output = run.standardOutput
        if case .signaled(let signal) = run.termination {
            output += "\nerror: \(tool.lastPathComponent) was stopped by signal \(signal) (time limit \(timeLimit) s)"
        }
        return Run(status: run.status, output: output)
    }
}

/// A temporary folder, removed when the value goes.
final class Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
