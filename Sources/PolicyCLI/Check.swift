import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyModel
import PolicyVerification

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load and validate policy sets and run their tests.",
        discussion: """
            Each DIR is a policy set (a folder holding .yaml files) or a folder of policy sets.
            Exit codes: 0 clean; 1 a set has errors; 2 a policy test fails; 64 usage error.
            """)

    @Argument(help: "Policy set folders, or folders holding policy sets.")
    var directories: [String] = ["policies"]

    @Option(help: "Output format: text, json or github (workflow annotations).")
    var format: OutputFormat = .text

    func run() throws {
        var sets: [SetReport] = []
        for directory in directories {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("'\(directory)' is not a folder")
            }
            for set in PolicyCompiler.policySets(under: directory) {
                let result = PolicyCompiler.load(directory: set)
                sets.append(SetReport(path: set, result: result, tests: PolicyTestRunner.run(result)))
            }
        }
        print(render(sets))
        if sets.contains(where: { $0.result.diagnostics.hasErrors }) { throw Exit.policyErrors }
        if sets.contains(where: { $0.tests.contains { !$0.passed } }) { throw Exit.failingTests }
    }

    struct SetReport {
        let path: String
        let result: PolicyLoadResult
        let tests: [PolicyTestResult]
    }

    private func render(_ sets: [SetReport]) -> String {
        switch format {
        case .text: return sets.map(text).joined(separator: "\n")
        case .github:
            var lines: [String] = []
            for set in sets {
                lines += set.result.diagnostics.map(DiagnosticRenderer.github)
                for test in set.tests where !test.passed {
                    let d = Diagnostic(.error, "test-failed", "policy test '\(test.name)' failed: " + test.failures.joined(separator: "; "), at: test.location)
                    lines.append(DiagnosticRenderer.github(d))
                }
                lines.append(summary(set))
            }
            return lines.joined(separator: "\n")
        case .json:
            return JSONText.object([
                .init("sets", .array(sets.map { set in
                    var fields: [JSONText.Field] = [
                        .init("path", .string(set.path)),
                        .init("ok", .bool(!set.result.diagnostics.hasErrors && set.tests.allSatisfy(\.passed))),
                    ]
                    if let policy = set.result.policy { fields.append(.init("contentHash", .string(policy.contentHash))) }
                    fields.append(.init("diagnostics", .array(set.result.diagnostics.map(DiagnosticRenderer.json))))
                    fields.append(.init("tests", .array(set.tests.map { test in
                        var t: [JSONText.Field] = [
                            .init("name", .string(test.name)), .init("location", .string(test.location.description)),
                            .init("passed", .bool(test.passed)),
                        ]
                        if !test.passed { t.append(.init("failures", .array(test.failures.map { .string($0) }))) }
                        if let decision = test.decision, !test.passed { t.append(.init("decision", decision.json)) }
                        return .object(t)
                    })))
                    return .object(fields)
                })),
            ]).rendered(pretty: true)
        }
    }

    private func text(_ set: SetReport) -> String {
        let renderer = DiagnosticRenderer(sources: set.result.sources)
        var lines = set.result.diagnostics.map(renderer.text)
        for test in set.tests where !test.passed {
            lines.append("\(test.location): error: policy test '\(test.name)' failed [test-failed]")
            lines += test.failures.map { "   - \($0)" }
        }
        lines.append(summary(set))
        return lines.joined(separator: "\n")
    }

    private func summary(_ set: SetReport) -> String {
        let errors = set.result.diagnostics.filter { $0.severity == .error }.count
        let warnings = set.result.diagnostics.filter { $0.severity == .warning }.count
        if errors > 0 {
            return "\(set.path): \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s"); not loaded"
        }
        let failed = set.tests.filter { !$0.passed }.count
        let passed = set.tests.count - failed
        return "\(set.path): ok, \(passed) test\(passed == 1 ? "" : "s") passed, \(failed) failed, \(warnings) warning\(warnings == 1 ? "" : "s")"
    }
}
