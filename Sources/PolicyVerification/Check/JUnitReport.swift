import PolicyCompiler
import PolicyEngine
import PolicyModel

/// JUnit XML as CI test reporters read it (the Jenkins/Ant `junit-10.xsd` shape).
///
/// `<testsuites>` holds one `<testsuite>` per policy set, whose testcases are, in order: the set's errors
/// (`<error>`; warnings made errors by `--strict` are `<failure>`s), or one passing `load` testcase when it has
/// none; each policy test (`<skipped>` when the set did not load); each invariant; and `coverage` when a
/// minimum was set. Each testcase has at most one `<error>`, `<failure>` or `<skipped>` child, and `file`/`line`
/// where the finding is written.
enum JUnitReport {
    static func render(_ report: CheckReport) -> String {
        let suites = report.sets.map(suite)
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out += "<testsuites" + attributes([
            ("name", "policy check"),
            ("tests", String(suites.map(\.cases.count).reduce(0, +))),
            ("failures", String(suites.map(\.failures).reduce(0, +))),
            ("errors", String(suites.map(\.errors).reduce(0, +))),
            ("time", seconds(report.sets.map(\.seconds).reduce(0, +))),
        ]) + ">\n"
        for suite in suites { out += suite.xml }
        out += "</testsuites>\n"
        return out
    }

    struct TestCase {
        enum Outcome {
            case passed
            case failure(message: String, type: String, body: String)
            case error(message: String, type: String, body: String)
            case skipped(message: String)
        }
        var name: String
        var classname: String
        var location: SourceLocation?
        var outcome: Outcome

        var xml: String {
            var attrs = [("name", name), ("classname", classname)]
            if let location { attrs += [("file", location.file), ("line", String(location.line))] }
            let open = "    <testcase" + attributes(attrs)
            switch outcome {
            case .passed:
                return open + "/>\n"
            case .failure(let message, let type, let body):
                return open + ">\n      <failure" + attributes([("message", message), ("type", type)]) + ">" + MarkupText.escape(body) + "</failure>\n    </testcase>\n"
            case .error(let message, let type, let body):
                return open + ">\n      <error" + attributes([("message", message), ("type", type)]) + ">" + MarkupText.escape(body) + "</error>\n    </testcase>\n"
            case .skipped(let message):
                return open + ">\n      <skipped" + attributes([("message", message)]) + "/>\n    </testcase>\n"
            }
        }
    }

    struct Suite {
        var cases: [TestCase]
        var xml: String
        var failures: Int
        var errors: Int
    }

    static func suite(_ set: SetReport) -> Suite {
        let renderer = DiagnosticRenderer(sources: set.result.sources)
        var cases: [TestCase] = []

        let errors = set.errors
        if errors.isEmpty {
            cases.append(TestCase(name: "load", classname: "\(set.name).load", location: nil, outcome: .passed))
        }
        for d in errors {
            let name = "[\(d.code)] \(d.message)"
            let body = renderer.text(d)
            let outcome: TestCase.Outcome =
                set.promoted.contains(d)
                ? .failure(message: d.message, type: d.code, body: body) : .error(message: d.message, type: d.code, body: body)
            cases.append(TestCase(name: name, classname: "\(set.name).diagnostics", location: d.location, outcome: outcome))
        }

        if set.loaded {
            for test in set.tests {
                var outcome = TestCase.Outcome.passed
                if !test.passed {
                    var body = test.failures.joined(separator: "\n")
                    if let decision = test.decision { body += "\ndecision: " + decision.json.rendered() }
                    if let request = test.request { body += "\nrequest: " + request.json.rendered() }
                    outcome = .failure(message: test.failures.joined(separator: "; "), type: DiagnosticCode.testFailed.rawValue, body: body)
                }
                cases.append(TestCase(name: test.name, classname: "\(set.name).tests", location: test.location, outcome: outcome))
            }
        } else {
            for test in set.result.declarations.tests {
                cases.append(TestCase(
                    name: test.name, classname: "\(set.name).tests", location: test.location,
                    outcome: .skipped(message: "the policy set did not load")))
            }
        }

        for invariant in set.invariants.results {
            var outcome = TestCase.Outcome.passed
            if !invariant.passed {
                var message = "invariant '\(invariant.name)' does not hold"
                var body = message
                if let c = invariant.counterexample {
                    let d = c.explanation.decision
                    message += ": expected \(c.expected), got \(d.effect.rawValue) (\(d.reason.rawValue))"
                    body = message + "\ncounterexample: " + c.request.json.rendered() + "\n"
                        + ExplanationText.lines(c.explanation).joined(separator: "\n")
                }
                outcome = .failure(message: message, type: DiagnosticCode.invariantFailed.rawValue, body: body)
            }
            cases.append(TestCase(name: invariant.name, classname: "\(set.name).invariants", location: invariant.location, outcome: outcome))
        }

        if let minimum = set.minCoverage, let coverage = set.coverage {
            var outcome = TestCase.Outcome.passed
            if set.coverageBelowMinimum {
                let message = "coverage \(Coverage.format(coverage.percent)) is below the minimum of \(formatMinimum(minimum))"
                let body = ([message] + CheckText.coverageLines(coverage, tests: set.tests.count)).joined(separator: "\n")
                outcome = .failure(message: message, type: DiagnosticCode.coverageBelowMinimum.rawValue, body: body)
            }
            cases.append(TestCase(
                name: "coverage of at least \(formatMinimum(minimum))", classname: "\(set.name).coverage", location: nil, outcome: outcome))
        }

        var failures = 0, errorCount = 0, skipped = 0
        for c in cases {
            switch c.outcome {
            case .failure: failures += 1
            case .error: errorCount += 1
            case .skipped: skipped += 1
            case .passed: break
            }
        }
        var xml = "  <testsuite" + attributes([
            ("name", set.path), ("tests", String(cases.count)), ("failures", String(failures)), ("errors", String(errorCount)),
            ("skipped", String(skipped)), ("time", seconds(set.seconds)),
        ]) + ">\n"
        if let policy = set.result.policy {
            xml += "    <properties>\n      <property" + attributes([("name", "contentHash"), ("value", policy.contentHash)]) + "/>\n    </properties>\n"
        }
        for c in cases { xml += c.xml }
        xml += "  </testsuite>\n"
        return Suite(cases: cases, xml: xml, failures: failures, errors: errorCount)
    }

    static func seconds(_ value: Double) -> String {
        let millis = Int((value * 1000).rounded())
        let fraction = String(millis % 1000)
        return "\(millis / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    static func attributes(_ pairs: [(String, String)]) -> String {
        pairs.map { " \($0.0)=\"\(MarkupText.escape($0.1, inAttribute: true))\"" }.joined()
    }
}
