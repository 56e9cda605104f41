import PolicyCompiler
import PolicyEngine
import PolicyModel

/// The output formats of `policy check`.
public enum CheckFormat: String, Sendable, CaseIterable {
    /// Compiler-style diagnostics with the source line, then a summary per set.
    case text
    /// One JSON document: `{"ok", "sets": [{path, ok, contentHash, diagnostics, tests, invariants, coverage?}]}`.
    case json
    /// GitHub Actions workflow commands (`::error file=...,line=...,col=...::`) that annotate the pull request.
    case github
    /// JUnit XML (`<testsuites>`, one `<testsuite>` per set) for CI test reports.
    case junit
    /// A short markdown summary (a table of sets, then each finding) for a CI job summary or a pull request.
    case markdown
}

extension CheckReport {
    /// The report in one format; text, JSON and GitHub end without a newline, as `print` adds one.
    public func rendered(as format: CheckFormat) -> String {
        switch format {
        case .text: return sets.map(CheckText.render).joined(separator: "\n")
        case .json: return CheckJSON.render(self).rendered(pretty: true)
        case .github: return sets.map(CheckGitHub.render).joined(separator: "\n")
        case .junit: return JUnitReport.render(self)
        case .markdown: return CheckMarkdown.render(self)
        }
    }
}

/// The human form: diagnostics as the compiler prints them, failed tests and invariants, coverage, a summary line.
enum CheckText {
    static func render(_ set: SetReport) -> String {
        let renderer = DiagnosticRenderer(sources: set.result.sources)
        var lines = set.diagnostics.map(renderer.text)
        for test in set.failedTests {
            lines.append("\(test.location): error: policy test '\(visible(test.name))' failed [test-failed]")
            lines += test.failures.map { "   - \(visible($0))" }
        }
        for invariant in set.failedInvariants {
            lines.append("\(invariant.location): error: invariant '\(visible(invariant.name))' does not hold [invariant-failed]")
            if let counterexample = invariant.counterexample {
                lines.append("   expected: \(counterexample.expected)")
                lines.append("   counterexample: \(counterexample.request.json.rendered())")
                lines += ExplanationText.lines(counterexample.explanation).map { "   " + $0 }
            }
        }
        if let coverage = set.coverage { lines += coverageLines(coverage, tests: set.tests.count) }
        if set.coverageBelowMinimum, let coverage = set.coverage, let minimum = set.minCoverage {
            lines.append(
                "\(set.path): error: coverage \(Coverage.format(coverage.percent)) is below the minimum of \(formatMinimum(minimum)) [coverage-below-minimum]")
        }
        lines.append(summary(set))
        return lines.joined(separator: "\n")
    }

    static func coverageLines(_ coverage: CoverageReport, tests: Int) -> [String] {
        var lines = [
            "coverage: \(coverage.covered) of \(coverage.total) items (\(Coverage.format(coverage.percent))) exercised by \(tests) test\(tests == 1 ? "" : "s")"
        ]
        let files = coverage.files
        let width = files.map(\.file.count).max() ?? 0
        for file in files {
            let counts = "\(file.covered)/\(file.total)"
            let pad = String(repeating: " ", count: width - file.file.count + max(1, 9 - counts.count))
            lines.append("  \(file.file)\(pad)\(counts)  \(Coverage.format(file.percent))")
        }
        let uncovered = coverage.uncovered
        if !uncovered.isEmpty {
            lines.append("  not exercised by any test:")
            lines += uncovered.map { "    \($0.location): \($0.name)" }
        }
        return lines
    }

    static func summary(_ set: SetReport) -> String {
        let errors = set.errors.count
        let warnings = set.warnings.count
        if !set.loaded {
            return "\(set.path): \(plural(errors, "error")), \(plural(warnings, "warning")); not loaded"
        }
        let failed = set.failedTests.count
        var parts = ["\(plural(set.tests.count - failed, "test")) passed", "\(failed) failed"]
        if !set.invariants.results.isEmpty {
            let broken = set.failedInvariants.count
            parts.append(
                "\(plural(set.invariants.results.count - broken, "invariant")) held, \(broken) broken over \(plural(set.invariants.spaceSize, "request"))")
        }
        if let coverage = set.coverage {
            parts.append("coverage \(Coverage.format(coverage.percent))" + (set.minCoverage.map { " (minimum \(formatMinimum($0)))" } ?? ""))
        }
        if errors > 0 { parts.append(plural(errors, "error")) }
        parts.append(plural(warnings, "warning"))
        return "\(set.path): \(set.outcome == .clean ? "ok" : "failed"), " + parts.joined(separator: ", ")
    }

    static func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

/// Text from policy files with control characters shown as `\u{7}`, so a test name cannot ring a bell or
/// send escape sequences to the terminal or CI log that shows it.
func visible(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// "80%" or "82.5%".
func formatMinimum(_ minimum: Double) -> String {
    minimum == minimum.rounded() ? "\(Int(minimum))%" : "\(minimum)%"
}

/// How `policy explain` and invariant counterexamples print a decision and its trace.
public enum ExplanationText {
    /// `deny (reason): message`, the decision's numbers, where it was decided, then `trace:` and one line per step.
    public static func lines(_ explanation: Explanation) -> [String] {
        let d = explanation.decision
        var lines = ["decision: \(d.effect.rawValue) (\(d.reason.rawValue))" + (d.message.map { ": \($0)" } ?? "")]
        var numbers: [String] = []
        if let limit = d.limit { numbers.append("limit \(limit)") }
        if let used = d.used { numbers.append("used \(used)") }
        if let remaining = d.remaining { numbers.append("remaining \(remaining)") }
        if let upgrade = d.upgradeTo { numbers.append("upgrade to \(upgrade)") }
        if !numbers.isEmpty { lines.append("  " + numbers.joined(separator: ", ")) }
        if let location = d.policy { lines.append("decided by \(location)") }
        lines.append("trace:")
        for step in explanation.trace {
            lines.append("  [\(step.outcome.rawValue)] \(step.check): \(step.detail)" + (step.location.map { "  (\($0))" } ?? ""))
        }
        return lines
    }
}

/// The machine form: one JSON document for every set.
enum CheckJSON {
    static func render(_ report: CheckReport) -> JSONText {
        .object([
            .init("ok", .bool(report.outcome == .clean)),
            .init("sets", .array(report.sets.map(set))),
        ])
    }

    static func set(_ set: SetReport) -> JSONText {
        var fields: [JSONText.Field] = [
            .init("path", .string(set.path)),
            .init("ok", .bool(set.outcome == .clean)),
        ]
        if let policy = set.result.policy { fields.append(.init("contentHash", .string(policy.contentHash))) }
        fields.append(.init("diagnostics", .array(set.diagnostics.map(DiagnosticRenderer.json))))
        fields.append(.init("tests", .array(set.tests.map(test))))
        fields.append(.init("invariants", .object([
            .init("spaceSize", .int(set.invariants.spaceSize)),
            .init("results", .array(set.invariants.results.map(invariant))),
        ])))
        if let coverage = set.coverage { fields.append(.init("coverage", self.coverage(coverage, minimum: set.minCoverage))) }
        return .object(fields)
    }

    static func test(_ test: PolicyTestResult) -> JSONText {
        var fields: [JSONText.Field] = [
            .init("name", .string(test.name)), .init("location", .string(test.location.description)), .init("passed", .bool(test.passed)),
        ]
        if !test.passed { fields.append(.init("failures", .array(test.failures.map { .string($0) }))) }
        if let decision = test.decision, !test.passed { fields.append(.init("decision", decision.json)) }
        return .object(fields)
    }

    static func invariant(_ invariant: InvariantResult) -> JSONText {
        var fields: [JSONText.Field] = [
            .init("name", .string(invariant.name)), .init("location", .string(invariant.location.description)),
            .init("checked", .int(invariant.checked)), .init("passed", .bool(invariant.passed)),
        ]
        if let c = invariant.counterexample {
            fields.append(.init("counterexample", .object([
                .init("request", c.request.json), .init("expected", .string(c.expected)), .init("decision", c.explanation.json),
            ])))
        }
        return .object(fields)
    }

    static func coverage(_ coverage: CoverageReport, minimum: Double?) -> JSONText {
        var fields: [JSONText.Field] = [
            .init("covered", .int(coverage.covered)), .init("total", .int(coverage.total)), .init("percent", percent(coverage.percent)),
        ]
        if let minimum { fields.append(.init("minimum", .double(minimum))) }
        fields.append(.init("files", .array(coverage.files.map { file in
            .object([
                .init("file", .string(file.file)), .init("covered", .int(file.covered)), .init("total", .int(file.total)),
                .init("percent", percent(file.percent)),
            ])
        })))
        fields.append(.init("uncovered", .array(coverage.uncovered.map { item in
            .object([.init("kind", .string(item.kind.rawValue)), .init("name", .string(item.name)), .init("location", .string(item.location.description))])
        })))
        return .object(fields)
    }

    /// Two decimals, rounded down so 99.999 never reads as 100.
    static func percent(_ value: Double) -> JSONText {
        .double((value * 100).rounded(.down) / 100)
    }
}

/// Workflow commands: every finding annotates its file and line on the pull request.
enum CheckGitHub {
    static func render(_ set: SetReport) -> String {
        var lines = set.diagnostics.map(DiagnosticRenderer.github)
        lines += set.failedTests.map { DiagnosticRenderer.github(TestFailed(test: $0).diagnostic) }
        lines += set.failedInvariants.map { DiagnosticRenderer.github(InvariantFailed(invariant: $0).diagnostic) }
        if let coverage = set.coverage {
            lines += coverage.uncovered.map { DiagnosticRenderer.github(Uncovered(item: $0).diagnostic) }
            if set.coverageBelowMinimum, let minimum = set.minCoverage {
                lines.append(DiagnosticRenderer.github(CoverageBelowMinimum(path: set.path, percent: coverage.percent, minimum: minimum).diagnostic))
            }
        }
        lines.append(CheckText.summary(set))
        return lines.joined(separator: "\n")
    }
}

/// The CI summary: one table row per set (result, tests, invariants, coverage, warnings), then what failed.
enum CheckMarkdown {
    static func render(_ report: CheckReport) -> String {
        let clean = report.outcome == .clean
        var lines = ["## Policy check: " + (clean ? "✅ passed" : "❌ failed"), ""]
        lines.append("| set | result | tests | invariants | coverage | errors | warnings |")
        lines.append("|---|---|---|---|---|---|---|")
        for set in report.sets {
            let cell = MatrixRenderer.markdownCell
            let result = !set.loaded ? "❌ not loaded" : set.outcome == .clean ? "✅ ok" : "❌ failed"
            let failed = set.failedTests.count
            let tests = set.loaded ? "\(set.tests.count - failed) passed, \(failed) failed" : "–"
            let broken = set.failedInvariants.count
            let invariants = set.loaded
                ? "\(set.invariants.results.count - broken) held, \(broken) broken over \(CheckText.plural(set.invariants.spaceSize, "request"))" : "–"
            let coverage = set.coverage.map { c in
                Coverage.format(c.percent) + (set.minCoverage.map { " (minimum \(formatMinimum($0)))" } ?? "")
            } ?? "–"
            lines.append("| \(cell(set.path)) | \(result) | \(tests) | \(invariants) | \(coverage) | \(set.errors.count) | \(set.warnings.count) |")
        }
        for set in report.sets {
            var findings: [String] = []
            for d in set.diagnostics {
                let mark = d.severity == .error ? "❌ error" : d.severity == .warning ? "⚠️ warning" : "ℹ️ note"
                let location = d.location.map { "`\($0)` " } ?? ""
                findings.append("- \(location)\(mark): \(MatrixRenderer.markdownCell(d.message)) `[\(d.code)]`")
            }
            for test in set.failedTests {
                findings.append("- `\(test.location)` ❌ policy test **\(MatrixRenderer.markdownCell(test.name))** failed: "
                    + test.failures.map(MatrixRenderer.markdownCell).joined(separator: "; "))
            }
            for invariant in set.failedInvariants {
                var line = "- `\(invariant.location)` ❌ invariant **\(MatrixRenderer.markdownCell(invariant.name))** does not hold"
                if let c = invariant.counterexample {
                    let d = c.explanation.decision
                    line += ": expected \(MatrixRenderer.markdownCell(c.expected)), got \(d.effect.rawValue) (\(d.reason.rawValue))"
                        + " for `\(c.request.json.rendered().replacingOccurrences(of: "`", with: "'"))`"
                }
                findings.append(line)
            }
            if set.coverageBelowMinimum, let coverage = set.coverage, let minimum = set.minCoverage {
                findings.append("- ❌ coverage \(Coverage.format(coverage.percent)) is below the minimum of \(formatMinimum(minimum))")
            }
            if let coverage = set.coverage, !coverage.uncovered.isEmpty {
                findings.append("- not exercised by any policy test: " + coverage.uncovered.map { "`\($0.location)` \(MatrixRenderer.markdownCell($0.name))" }.joined(separator: ", "))
            }
            guard !findings.isEmpty else { continue }
            lines += ["", "### \(MatrixRenderer.markdownCell(set.path))", ""] + findings
        }
        return lines.joined(separator: "\n")
    }
}
