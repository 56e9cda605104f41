import Foundation
import GatehouseTestSupport
import PolicyCompiler
import PolicyEngine
import PolicyModel
@testable import PolicyVerification
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The check report's renderers on reports the binary cannot produce yet (failing invariants), and the JUnit XML
/// against the rules of the common Jenkins/Ant schema (`junit-10.xsd`), checked with Foundation's XML parser.
@Suite struct CheckReportTests {
    static let goldenFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("ReportGolden")

    static let policyText = """
        resources:
          project:
            owner: ownerId
            roles:
              viewer: {}
              editor: {grants: [edit]}
            memberActions: [view]
            actions:
              view: {}
              edit: {}
        rules:
          - name: viewers-may-edit-drafts
            effect: allow
            resources: [project]
            actions: [edit]
            when: resource.role == "viewer"
        """

    static func compiled() -> PolicyLoadResult {
        PolicyCompiler.compile(name: "projects", files: [PolicyFileInput(path: "projects/app.yaml", bytes: Array(policyText.utf8))])
    }

    /// A set whose invariant 'viewer never edit' is broken by the allow rule, as the prover would report it.
    static func reportWithInvariants() throws -> CheckReport {
        let result = compiled()
        let policy = try #require(result.policy)
        let request = Request(
            subject: Subject(id: "u1"), action: "edit", resource: Resource(type: "project", ownerId: "u2", members: ["u1": "viewer"]),
            context: Context(now: Timestamp.parse("2026-06-01T00:00:00Z")))
        var set = CheckRunner.check(result, path: "projects")
        set.invariants = InvariantReport(
            results: [
                InvariantResult(
                    name: "viewer never edit", location: SourceLocation(file: "projects/app.yaml", line: 18, column: 5), checked: 12,
                    counterexample: Counterexample(request: request, expected: "deny", explanation: policy.explain(request))),
                InvariantResult(
                    name: "owner may always view", location: SourceLocation(file: "projects/app.yaml", line: 19, column: 5), checked: 12,
                    counterexample: nil),
            ],
            diagnostics: [
                Diagnostic(
                    .warning, .invariantSelectsNothing, "invariant 'nobody' selects no request",
                    at: SourceLocation(file: "projects/app.yaml", line: 18, column: 5), help: ["check its subject and action"])
            ],
            spaceSize: 12)
        set.diagnostics = (set.diagnostics + set.invariants.diagnostics).sortedForDisplay()
        set.seconds = 0
        return CheckReport(sets: [set], options: CheckOptions())
    }

    @Test(arguments: CheckFormat.allCases)
    func failingInvariantsRenderInEveryFormat(_ format: CheckFormat) throws {
        let report = try Self.reportWithInvariants()
        #expect(report.outcome == .failures)
        let actual = report.rendered(as: format)
        let url = Self.goldenFolder.appendingPathComponent("invariants.\(format.rawValue).txt")
        #expect(actual == (try Golden.expected(for: actual, at: url)))
        switch format {
        case .text: #expect(actual.contains("projects/app.yaml:18:5: error: invariant 'viewer never edit' does not hold [invariant-failed]"))
        case .json: #expect(actual.contains(#""expected": "deny""#) && actual.contains(#""trace": ["#))
        case .github: #expect(actual.contains("::error file=projects/app.yaml,line=18,col=5,title=invariant-failed::"))
        case .junit: #expect(actual.contains(#"<testcase name="viewer never edit" classname="projects.invariants" file="projects/app.yaml" line="18">"#))
        case .markdown: #expect(actual.contains("`projects/app.yaml:18:5` ❌ invariant **viewer never edit** does not hold: expected deny"))
        }
    }

    @Test func strictMakesLintWarningsErrorsAndJUnitFailures() throws {
        let text = "tiers:\n  free: {name: Free}\nfeatures:\n  unused: {name: Unused, tiers: [free]}\nresources:\n  app:\n    actions:\n      view: {}\n"
        let fixed = PolicyCompiler.compile(name: "s", files: [PolicyFileInput(path: "s/app.yaml", bytes: Array(text.utf8))])
        let lax = CheckRunner.check(fixed, path: "s")
        #expect(lax.outcome == .clean)
        #expect(lax.warnings.map(\.code) == ["unused-feature"])
        let strict = CheckRunner.check(fixed, path: "s", options: CheckOptions(strict: true))
        #expect(strict.outcome == .policyErrors)
        #expect(strict.errors.map(\.code) == ["unused-feature"])
        let xml = CheckReport(sets: [strict], options: CheckOptions(strict: true)).rendered(as: .junit)
        #expect(xml.contains(#"<failure message="feature 'unused' is declared but no action needs it" type="unused-feature">"#))
        #expect(!xml.contains("<error "), "a promoted warning is a failure, not an error")
    }

    @Test func coverageMinimumDecidesTheOutcome() throws {
        let result = Self.compiled()
        let none = CheckRunner.check(result, path: "p", options: CheckOptions(minCoverage: 1))
        #expect(none.coverage?.covered == 0, "the set has no tests")
        #expect(none.coverageBelowMinimum && none.outcome == .failures)
        let zero = CheckRunner.check(result, path: "p", options: CheckOptions(minCoverage: 0))
        #expect(!zero.coverageBelowMinimum && zero.outcome == .clean)
    }

    // MARK: JUnit XML

    @Test func junitEscapesMarkupAndControlCharacters() throws {
        var name = "a <b> & \"c\" 'd' ]]> \u{FFFE}"
        for scalar in 0..<0x20 { name.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
        let result = Self.compiled()
        var set = CheckRunner.check(result, path: "p<&>")
        set.tests = [
            PolicyTestResult(
                name: name, location: SourceLocation(file: "p/tests.yaml", line: 1, column: 1), failures: ["failed: \(name)"], decision: nil)
        ]
        let xml = CheckReport(sets: [set], options: CheckOptions()).rendered(as: .junit)
        try JUnitSchema.validate(xml)
        #if canImport(FoundationXML)
        let document = try XMLDocument(data: Data(xml.utf8), options: [])
        let testcase = try #require(try document.nodes(forXPath: "//testcase[@classname='p<&>.tests']").first as? XMLElement)
        var expected = "a <b> & \"c\" 'd' ]]> \\u{FFFE}"
        for scalar in 0..<0x20 {
            switch scalar {
            case 0x09, 0x0A, 0x0D: expected.unicodeScalars.append(Unicode.Scalar(UInt8(scalar)))
            default: expected += "\\u{\(String(scalar, radix: 16, uppercase: true))}"
            }
        }
        #expect(testcase.attribute(forName: "name")?.stringValue == expected)
        #endif
    }

    @Test func junitOfEveryGoldenCaseFollowsTheSchema() throws {
        var reports: [CheckReport] = [try Self.reportWithInvariants()]
        let golden = CLIGoldenTests.folder
        for options in [CheckOptions(), CheckOptions(strict: true, minCoverage: 90)] {
            reports.append(CheckRunner.check(directories: [golden.appendingPathComponent("check-passing/policy").path], options: options))
            reports.append(CheckRunner.check(directories: [golden.appendingPathComponent("check-failing/sets").path], options: options))
        }
        let shipped = Repository.root
            .appendingPathComponent("policies")
        reports.append(CheckRunner.check(directories: [shipped.path], options: CheckOptions(minCoverage: 10)))
        for report in reports {
            try JUnitSchema.validate(report.rendered(as: .junit))
        }
    }

    @Test func schemaCheckerRejectsWhatTheSchemaForbids() {
        let bad = [
            "<testsuites><testcase name='x'/></testsuites>",
            "<testsuites><testsuite name='s'><testcase name='x'/></testsuite></testsuites>",
            "<testsuites><testsuite tests='1'><testcase/></testsuite></testsuites>",
            "<testsuites><testsuite tests='1'><testcase name='x'><failure/><error/></testcase></testsuite></testsuites>",
            "<testsuites><testsuite tests='1' failures='1'><testcase name='x' colour='red'><failure/></testcase></testsuite></testsuites>",
            "<testsuites><testsuite tests='2'><testcase name='x'/></testsuite></testsuites>",
            "<testsuites><testsuite tests='1'><testcase name='x'></testsuite></testsuites>",
        ]
        for xml in bad {
            #expect(throws: (any Error).self, "\(xml)") { try JUnitSchema.validate(xml) }
        }
        #expect(throws: Never.self) {
            try JUnitSchema.validate("<testsuites><testsuite tests='1' failures='1'><testcase name='x'><failure message='m'>t</failure></testcase></testsuite></testsuites>")
        }
    }
}

/// The rules of the Jenkins/Ant JUnit schema (`junit-10.xsd`) that a report must follow, plus consistency of the
/// counts and at most one outcome per testcase (what the stricter Ant schema allows).
enum JUnitSchema {
    struct Violation: Error, CustomStringConvertible {
        var description: String
    }

    static let attributes: [String: (required: Set<String>, allowed: Set<String>)] = [
        "testsuites": ([], ["name", "time", "tests", "failures", "disabled", "errors"]),
        "testsuite": (
            ["tests"],
            [
                "name", "tests", "failures", "errors", "time", "disabled", "skipped", "skips", "timestamp", "hostname", "id", "package",
                "assertions", "file", "skip", "log", "url",
            ]
        ),
        "properties": ([], []),
        "property": (["name", "value"], ["name", "value"]),
        "testcase": (["name"], ["name", "assertions", "time", "timestamp", "classname", "status", "class", "file", "line", "log", "group", "url"]),
        "failure": ([], ["type", "message"]),
        "error": ([], ["type", "message"]),
        "skipped": ([], ["type", "message"]),
        "system-out": ([], []),
        "system-err": ([], []),
    ]

    static let children: [String: Set<String>] = [
        "testsuites": ["testsuite"],
        "testsuite": ["testsuite", "properties", "testcase", "system-out", "system-err"],
        "properties": ["property"],
        "property": [],
        "testcase": ["skipped", "error", "failure", "system-out", "system-err"],
        "failure": [], "error": [], "skipped": [], "system-out": [], "system-err": [],
    ]

    static func validate(_ xml: String) throws {
        #if canImport(FoundationXML)
        // XMLDocument recovers from some malformed input; the SAX parser reports it, so it judges well-formedness.
        let parser = XMLParser(data: Data(xml.utf8))
        if !parser.parse() || parser.parserError != nil {
            throw Violation(description: "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "parse failed")")
        }
        let document: XMLDocument
        do {
            document = try XMLDocument(data: Data(xml.utf8), options: [])
        } catch {
            throw Violation(description: "not well-formed XML: \(error)")
        }
        guard let root = document.rootElement(), root.name == "testsuites" else { throw Violation(description: "the root must be <testsuites>") }
        try check(root)
        #else
        // No XML parser on this platform: the structural checks run where FoundationXML exists (Linux, macOS).
        _ = xml
        #endif
    }

    #if canImport(FoundationXML)
    static func check(_ element: XMLElement) throws {
        let name = element.name ?? ""
        guard let rule = attributes[name], let allowedChildren = children[name] else { throw Violation(description: "unknown element <\(name)>") }
        let present = Set((element.attributes ?? []).compactMap(\.name))
        if let missing = rule.required.subtracting(present).first { throw Violation(description: "<\(name)> lacks \(missing)") }
        if let extra = present.subtracting(rule.allowed).first { throw Violation(description: "<\(name)> may not have \(extra)") }
        let elements = (element.children ?? []).compactMap { $0 as? XMLElement }
        for child in elements {
            guard allowedChildren.contains(child.name ?? "") else { throw Violation(description: "<\(child.name ?? "")> inside <\(name)>") }
            try check(child)
        }
        for count in ["tests", "failures", "errors", "skipped"] {
            if let value = element.attribute(forName: count)?.stringValue, Int(value).map({ $0 < 0 }) ?? true {
                throw Violation(description: "<\(name) \(count)=\"\(value)\"> is not a count")
            }
        }
        if let time = element.attribute(forName: "time")?.stringValue, Double(time) == nil {
            throw Violation(description: "<\(name) time=\"\(time)\"> is not a number of seconds")
        }
        switch name {
        case "testcase":
            let outcomes = elements.filter { ["failure", "error", "skipped"].contains($0.name ?? "") }
            if outcomes.count > 1 { throw Violation(description: "testcase '\(element.attribute(forName: "name")?.stringValue ?? "")' has \(outcomes.count) outcomes") }
        case "testsuite":
            let cases = elements.filter { $0.name == "testcase" }
            func count(_ outcome: String) -> Int { cases.count(where: { ($0.children ?? []).contains { $0.name == outcome } }) }
            let expected = ["tests": cases.count, "failures": count("failure"), "errors": count("error"), "skipped": count("skipped")]
            for (attribute, value) in expected {
                if let stated = element.attribute(forName: attribute)?.stringValue, Int(stated) != value {
                    throw Violation(description: "testsuite says \(attribute)=\(stated), holds \(value)")
                }
            }
        case "testsuites":
            let suites = elements
            for attribute in ["tests", "failures", "errors"] {
                let sum = suites.compactMap { $0.attribute(forName: attribute)?.stringValue.flatMap { Int($0) } }.reduce(0, +)
                if let stated = element.attribute(forName: attribute)?.stringValue, Int(stated) != sum {
                    throw Violation(description: "testsuites says \(attribute)=\(stated), its suites add up to \(sum)")
                }
            }
        default: break
        }
    }
    #endif
}
