import Foundation
import PolicyVerification
import Testing
import GatehouseTestSupport

/// The `policy` executable end to end: exit codes and the JSON Lines co-process protocol.
@Suite(.startsServers) struct CLITests {
    static let root = Repository.root

    static var binary: URL {
        // Test bundles and executables are built into the same folder.
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("policy").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("policy")
    }

    static func run(_ arguments: [String], input: String = "", in directory: URL = root) async throws -> (status: Int32, out: String, err: String) {
        let run = try await Program(binary, arguments, in: directory).run(input: input)
        return (run.status, run.standardOutput, run.standardError)
    }

    @Test func checkPassesOnTheShippedPolicies() async throws {
        let result = try await Self.run(["check", "policies"])
        #expect(result.status == 0, "\(result.out)\(result.err)")
        #expect(result.out.contains("policies/research-crawler: ok"))
    }

    @Test func checkExitsOneOnPolicyErrorsAndNamesTheLocation() async throws {
        let result = try await Self.run(["check", "Tests/PolicyCorpusTests/Corpus/unknown-tier/policy"])
        #expect(result.status == 1)
        #expect(result.out.contains("features.yaml:7:18: error: unknown tier 'premium' [unknown-tier]"))
    }

    @Test func checkExitsTwoOnAFailingPolicyTest() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-failing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
            resources:
              app:
                actions:
                  export: {signIn: true}
            tests:
              - name: wrong on purpose
                request: {action: export, resource: {type: app}}
                expect: {decision: allow}
            """.write(to: dir.appendingPathComponent("p.yaml"), atomically: true, encoding: .utf8)
        let result = try await Self.run(["check", dir.path, "--format", "json"])
        #expect(result.status == 2)
        #expect(result.out.contains("\"passed\": false"))
    }

    @Test func junitOutputWritesTheSameReportBesideAnotherFormat() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-junit-\(UUID().uuidString).xml")
        defer { try? FileManager.default.removeItem(at: file) }
        let github = try await Self.run(["check", "policies", "--format", "github", "--junit-output", file.path])
        #expect(github.status == 0, "\(github.out)\(github.err)")
        #expect(!github.out.contains("<testsuites"))
        let junit = try await Self.run(["check", "policies", "--format", "junit"])
        let normalize = { (s: String) in s.replacingOccurrences(of: #"time="[0-9.]+""#, with: "", options: .regularExpression) }
        #expect(normalize(try String(contentsOf: file, encoding: .utf8)) == normalize(junit.out))
        try JUnitSchema.validate(junit.out)
    }

    /// The `policy check` commands of the CI examples, run as written on the shipped policies.
    @Test(arguments: ["github-actions.yml", "gitlab-ci.yml"])
    func ciExamplesPassOnTheShippedPolicies(_ example: String) async throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("examples/ci/\(example)"), encoding: .utf8)
        let commands = text.split(separator: "\n").compactMap { line -> [String]? in
            guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("#"), let start = line.range(of: "policy check ") else { return nil }
            // The command's own arguments: up to a redirection or pipe.
            let command = line[start.upperBound...].prefix { $0 != ">" && $0 != "|" }
            return ["check"] + command.split(separator: " ").map(String.init)
        }
        #expect(!commands.isEmpty, "\(example) should run policy check")
        for var arguments in commands {
            let report = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-ci-\(UUID().uuidString).xml")
            defer { try? FileManager.default.removeItem(at: report) }
            if let i = arguments.firstIndex(of: "--junit-output") { arguments[i + 1] = report.path }
            let result = try await Self.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.out)\(result.err)")
            if arguments.contains("--junit-output") { try JUnitSchema.validate(try String(contentsOf: report, encoding: .utf8)) }
        }
    }

    @Test func checkHelpDocumentsFormatsExitCodesAndLints() async throws {
        let help = try await Self.run(["check", "--help"])
        #expect(help.status == 0)
        for text in ["text", "json", "github", "junit", "0   clean", "1   policy errors", "2   a policy test fails", "64  usage error", "--strict", "--min-coverage"] {
            #expect(help.out.contains(text), "check --help should mention \(text)")
        }
        for rule in PolicyLinter.rules { #expect(help.out.contains(rule.code)) }
    }

    @Test func usageErrorsExit64() async throws {
        #expect(try await Self.run(["check", "--format", "yaml"]).status == 64)
        #expect(try await Self.run(["decide"]).status == 64)
    }

    @Test func jsonlAnswersEveryLineInOrderAndSurvivesBadLines() async throws {
        let input = """
            {"subject": {"id": "u1", "tier": "free"}, "action": "add_source", "resource": {"type": "app", "usage": {"sources": 50}}}
            not json
            {"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}

            {"action": "view", "resource": {"type": "project", "usage": {"sources": "x"}}}
            {"action": "view", "resource": {"type": "project", "ownerId": "alice"}}

            """
        let result = try await Self.run(["decide", "--policies", "policies/research-crawler", "--jsonl"], input: input)
        #expect(result.status == 0)
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].hasPrefix(#"{"decision":"deny","reason":"limit_exceeded","message":"You've reached the limit of 50 sources. Upgrade to Pro for unlimited.","limit":50,"used":50,"remaining":0,"upgradeTo":"pro","policy":"policies/research-crawler/tiers.yaml:"#))
        #expect(lines[1].hasPrefix(#"{"error":{"code":"invalid_json","kind":"syntax","detail":"invalid JSON"#))
        #expect(lines[2].hasPrefix(#"{"decision":"allow","reason":"allowed""#))
        #expect(lines[3].contains(#""field":"resource.usage.sources""#))
        #expect(lines[3].hasSuffix(#","line":5}"#))
        #expect(lines[4].hasPrefix(#"{"decision":"deny","reason":"unauthenticated""#))
    }
}

/// `policy decide` names a misspelt field and suggests the right one, as the server's problem does.
@Suite(.startsServers) struct DecideSuggestionTests {
    @Test func aMisspeltFieldGetsADidYouMeanInBothModes() async throws {
        let request = #"{"subject":{"id":"u1","teir":"free"},"action":"view","resource":{"type":"app"}}"#
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-teir-\(UUID().uuidString).json")
        try request.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let single = try await CLITests.run(["decide", "--policies", "policies/research-crawler", "--request", file.path])
        #expect(single.status == 65)
        #expect(single.err.contains("subject.teir: unknown field; did you mean 'tier'?"))
        let stream = try await CLITests.run(["decide", "--policies", "policies/research-crawler", "--jsonl"], input: request + "\n")
        #expect(stream.out.contains(#""field":"subject.teir","kind":"unknown_field","detail":"unknown field; did you mean 'tier'?""#))
    }
}

/// `--help` as a terminal shows it (80 columns when not a terminal): paragraphs wrap at spaces, not at the
/// source's line ends, and every example command stays on one line so it pastes as one.
@Suite(.startsServers) struct HelpLayoutTests {
    @Test(arguments: ["", "check", "decide", "explain", "diff", "matrix", "serve", "schema", "version", "plan", "keygen", "bundle", "bundle build", "bundle verify", "bundle inspect"])
    func helpWrapsCleanlyAndExamplesPasteAsOneLine(_ command: String) async throws {
        let help = try await CLITests.run(command.split(separator: " ").map(String.init) + ["--help"])
        #expect(help.status == 0)
        let lines = help.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let discussion = lines.prefix { !$0.hasPrefix("USAGE:") && !$0.hasPrefix("ARGUMENTS:") && !$0.hasPrefix("OPTIONS:") }
        for (i, line) in discussion.enumerated() where line.hasPrefix("  policy ") {
            let next = i + 1 < discussion.count ? discussion[discussion.startIndex + i + 1] : ""
            #expect(next.isEmpty || next.hasPrefix("  "), "policy \(command) --help breaks an example over two lines:\n\(line)\n\(next)")
        }
        for (i, line) in discussion.enumerated().dropLast() where !line.isEmpty && !line.hasPrefix(" ") {
            let next = discussion[discussion.startIndex + i + 1]
            // A ragged break: a short line followed by more of the same sentence means a hard newline mid-paragraph.
            let continues = next.first.map { $0.isLowercase } ?? false
            #expect(!(line.count < 50 && continues && !line.hasSuffix(":")), "policy \(command) --help breaks a paragraph early:\n\(line)\n\(next)")
        }
    }
}

/// `policy plan` answers for every resource of a type: a flag about one resource is refused, naming it, not ignored.
@Suite(.startsServers) struct PlanFlagTests {
    @Test(arguments: [
        ["--resource-id", "p1"], ["--owner", "self"], ["--member-role", "editor"], ["--usage", "sources=3"],
        ["--resource-attribute", "archived=true"],
    ])
    func aFlagAboutOneResourceIsAUsageError(_ flag: [String]) async throws {
        let base = ["plan", "--policies", "policies/research-crawler", "--subject-id", "u1", "--action", "edit", "--resource-type", "project"]
        let refused = try await CLITests.run(base + flag)
        #expect(refused.status == 64, "\(refused.err)")
        #expect(refused.err.contains("error: \(flag[0]): a plan covers every resource of the type"), "\(refused.err)")
        #expect(try await CLITests.run(base).status == 0)
    }
}
