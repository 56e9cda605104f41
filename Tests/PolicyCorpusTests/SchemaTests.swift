import Foundation
import GatehouseTestSupport
import PolicyCompiler
import Testing

/// `schemas/policy.schema.json`: generated from the compiler's key tables, and it judges files as the compiler
/// does: every shipped and corpus policy validates, each corpus case with an unknown key or a wrong type is refused.
/// Validation is Python's jsonschema over PyYAML, as a YAML language server in an editor would do it.
@Suite(.startsServers) struct SchemaTests {
    static let schema = CLITests.root.appendingPathComponent("schemas/policy.schema.json")

    @Test func theShippedSchemaIsWhatTheCompilerGenerates() async throws {
        let generated = PolicySchema.document()
        #expect(generated == (try Golden.expected(for: generated, at: Self.schema)), "run POLICY_UPDATE_GOLDEN=1 swift test --filter SchemaTests")
        let printed = try await CLITests.run(["schema"])
        #expect(printed.status == 0)
        #expect(printed.out == generated)
    }

    static let modules = ["jsonschema", "yaml"]
    static func python() async -> String? { await ExternalTool.interpreter(root: CLITests.root, importing: modules) }
    static func shouldRun() async -> Bool { await ExternalTool.shouldRun(root: CLITests.root, importing: modules) }

    /// Each file's verdict: "ok", "refused" or "unreadable" (YAML that PyYAML itself refuses).
    func verdicts(_ files: [URL]) async throws -> [String: String] {
        let python = try #require(await Self.python(), "needs python with jsonschema and PyYAML (.ci/run installs them in .venv)")
        let (status, text) = try await ExternalTool.run(
            python, [CLITests.root.appendingPathComponent("Tests/Schemas/validate.py").path, Self.schema.path] + files.map(\.path))
        #expect(status == 0, "\(text)")
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let verdict = String(line.prefix { $0 != " " })
            let rest = line.dropFirst(verdict.count + 1)
            let path = rest.split(separator: ":", maxSplits: 1).first.map(String.init) ?? String(rest)
            result[path] = verdict
        }
        return result
    }

    func yamlFiles(under folder: URL) -> [URL] {
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        return (walker?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "yaml" }.sorted { $0.path < $1.path }
    }

    @Test(.enabled("needs python with jsonschema and PyYAML: run .ci/run") { await SchemaTests.shouldRun() })
    func everyShippedPolicyFileValidates() async throws {
        let files = yamlFiles(under: CLITests.root.appendingPathComponent("policies"))
        #expect(files.count >= 10)
        let verdicts = try await verdicts(files)
        for file in files { #expect(verdicts[file.path] == "ok", "\(file.path): \(verdicts[file.path] ?? "no verdict")") }
    }

    /// The corpus cases whose expected diagnostics say the file's shape is wrong are refused by the schema; those
    /// whose errors only the compiler can find (unknown references, lints, cycles) validate.
    @Test(.enabled("needs python with jsonschema and PyYAML: run .ci/run") { await SchemaTests.shouldRun() })
    func corpusCasesAreJudgedAsTheCompilerJudgesTheirShape() async throws {
        let corpus = CLITests.root.appendingPathComponent("Tests/PolicyCorpusTests/Corpus")
        let shapeCodes = ["[unknown-key]", "[wrong-type]", "[invalid-effect]", "[invalid-expect]", "[missing-key]", "[unknown-type]"]
        var refusedUnknownKey = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted() {
            let folder = corpus.appendingPathComponent(name)
            guard let expected = try? String(contentsOf: folder.appendingPathComponent("expected.txt"), encoding: .utf8) else { continue }
            let files = yamlFiles(under: folder.appendingPathComponent("policy"))
            guard !files.isEmpty else { continue }
            let verdicts = try await verdicts(files).values
            if verdicts.contains("unreadable") { continue }  // bad YAML: the YAML layer's to report, not the schema's
            // A duration is refused by the schema when it is not one ('5 minutes') but not when it is out of range
            // (negative, over a century): only the compiler judges the second, so such cases are not the schema's.
            if expected.contains("[invalid-duration]"), !shapeCodes.contains(where: { expected.contains($0) }) { continue }
            let shapeWrong = shapeCodes.contains { expected.contains($0) }
            if shapeWrong {
                #expect(verdicts.contains("refused"), "corpus case '\(name)' has shape errors the schema lets through")
                if expected.contains("[unknown-key]") { refusedUnknownKey += 1 }
            } else {
                #expect(!verdicts.contains("refused"), "corpus case '\(name)' is refused by the schema but its errors are not about shape")
            }
        }
        #expect(refusedUnknownKey >= 1)
    }
}
