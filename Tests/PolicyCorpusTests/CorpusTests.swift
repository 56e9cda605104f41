import Foundation
import GatehouseTestSupport
import PolicyCompiler
import PolicyModel
import PolicyVerification
import Testing

/// Broken policy folders with their expected diagnostics, as `policy check` prints them; and `lint-CODE` folders,
/// which load and must draw warnings of that lint code only.
/// `POLICY_UPDATE_GOLDEN=1 swift test --filter CorpusTests` rewrites the expected files.
@Suite(.computeBound) struct CorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    static var cases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test(arguments: cases)
    func diagnosticsMatchGolden(_ name: String) throws {
        let folder = Self.corpus.appendingPathComponent(name)
        let policyFolder = folder.appendingPathComponent("policy")
        var files: [PolicyFileInput] = []
        for file in PolicyCompiler.policyFiles(in: policyFolder.path) {
            let relative = "policy" + file.dropFirst(policyFolder.path.count)
            files.append(PolicyFileInput(path: relative, bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))))
        }
        let result = PolicyCompiler.compile(name: name, files: files)
        var diagnostics = result.diagnostics
        if name.hasPrefix("lint-") {
            let code = String(name.dropFirst("lint-".count))
            let isSpaceLint = InvariantProver.lintCodes.contains { $0.code == code }
            #expect(PolicyLinter.rules.contains { $0.code == code } || isSpaceLint, "no lint has the code '\(code)'")
            #expect(result.policy != nil, "a lint case must load: \(result.diagnostics.map(\.message))")
            #expect(result.diagnostics.isEmpty)
            let lints = (PolicyLinter.lint(result) + InvariantProver.prove(result).diagnostics).sortedForDisplay()
            #expect(!lints.isEmpty, "lint '\(code)' found nothing")
            for lint in lints {
                #expect(lint.code == code && lint.severity == .warning, "\(lint.code): \(lint.message)")
                #expect(lint.location != nil && !lint.help.isEmpty, "a lint points at the declaration and says what to do")
            }
            diagnostics = lints
        } else {
            #expect(result.policy == nil, "a broken policy set must not yield an engine")
            #expect(result.diagnostics.hasErrors)
        }
        let renderer = DiagnosticRenderer(sources: result.sources)
        let actual = diagnostics.map(renderer.text).joined(separator: "\n") + "\n"
        let expectedURL = folder.appendingPathComponent("expected.txt")
        let expected = try Golden.expected(for: actual, at: expectedURL)
        #expect(actual == expected)
    }

    @Test func everyLintHasACorpusCase() {
        for rule in PolicyLinter.rules {
            #expect(Self.cases.contains("lint-\(rule.code)"), "add Corpus/lint-\(rule.code)/ for '\(rule.code)'")
        }
        // deny-without-message cannot fire on a set that loads (the compiler refuses empty messages and every
        // reason has a built-in one); SpaceLintTests builds such a policy by hand.
        for (code, _) in InvariantProver.lintCodes where code != "deny-without-message" {
            #expect(Self.cases.contains("lint-\(code)"), "add Corpus/lint-\(code)/ for '\(code)'")
        }
    }

    @Test func shippedPolicySetsDrawNoLintWarnings() {
        let root = Repository.root
        for set in PolicyCompiler.policySets(under: root.appendingPathComponent("policies").path) {
            let result = PolicyCompiler.load(directory: set)
            let lints = PolicyLinter.lint(result) + InvariantProver.prove(result).diagnostics
            #expect(lints.isEmpty, "\(set): \(lints.map { "\($0.code): \($0.message)" })")
        }
    }

    @Test func emptyFolderIsAnError() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = PolicyCompiler.load(directory: dir.path)
        #expect(result.policy == nil)
        #expect(result.diagnostics.map(\.code) == ["empty-policy-set"])
    }

    @Test func oversizedFileIsRefusedWithoutReadingItAll() throws {
        let big = [UInt8](repeating: UInt8(ascii: "#"), count: (1 << 20) + 10)
        let result = PolicyCompiler.compile(name: "big", files: [PolicyFileInput(path: "big.yaml", bytes: big)])
        #expect(result.policy == nil)
        #expect(result.diagnostics.map(\.code) == ["file-too-large"])
    }

    @Test func shippedPolicySetsLoadCleanAndPassTheirTests() throws {
        let root = Repository.root
        let sets = PolicyCompiler.policySets(under: root.appendingPathComponent("policies").path)
        #expect(sets.count == 3)
        for set in sets {
            let result = PolicyCompiler.load(directory: set)
            #expect(result.diagnostics.isEmpty, "\(set): \(result.diagnostics.map(\.message))")
            let tests = PolicyTestRunner.run(result)
            #expect(tests.count >= 10, "\(set) should carry its own tests")
            for test in tests { #expect(test.passed, "\(set): \(test.name): \(test.failures)") }
        }
    }
}
