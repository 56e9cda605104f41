import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification
import Testing

/// `policy replay` (issue 37, item 3): recorded decisions re-decided under a candidate set.
@Suite struct ReplayTests {
    static let tiers = ["free", "pro", "academic", "team"]
    static let actions = ["add_source", "ai_suggestions", "cloud_sync", "collaboration"]
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    /// The research-crawler set's files, with `edit` applied to each file's text.
    static func crawler(_ edit: (String, String) -> String = { _, text in text }) throws -> CompiledPolicy {
        let dir = repositoryRoot + "/policies/research-crawler"
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".yaml") }.sorted()
        let files = try names.map { name in (name, edit(name, try String(contentsOfFile: dir + "/" + name, encoding: .utf8))) }
        let result = load(files, name: "research-crawler")
        return try #require(result.policy, "\(result.diagnostics)")
    }

    /// `count` requests over tiers, actions and source counts 0..59, each decided by `policy` and written as a record.
    static func records(_ count: Int, decidedBy policy: CompiledPolicy) -> [(request: Request, line: String)] {
        (0..<count).map { i in
            let subject = Subject(
                id: "u-\(i % 17)", tier: tiers[i % tiers.count], roles: i % 3 == 0 ? ["customer"] : [],
                auth: Authentication(method: i % 2 == 0 ? "pin" : "apple", verifiedAt: now.addingTimeInterval(-60)))
            let request = Request(
                subject: subject, action: actions[(i / 5) % actions.count], resource: Resource(type: "app", usage: ["sources": i % 60]),
                context: Context(now: now))
            let d = policy.decide(request)
            let record = DecisionRecord(id: i + 1, subject: subject.id, effect: d.effect, reason: d.reason, policyHash: policy.contentHash, request: request)
            return (request, record.json.rendered())
        }
    }

    static func lines(_ records: [(request: Request, line: String)], extra: [String] = []) -> [Substring] {
        (records.map(\.line) + extra).joined(separator: "\n").split(separator: "\n", omittingEmptySubsequences: false)
    }

    @Test func replayingUnderTheSamePolicyFlipsNothing() throws {
        let policy = try Self.crawler()
        let records = Self.records(3_000, decidedBy: policy)
        let againstRecorded = DecisionReplay.replay(lines: Self.lines(records), candidate: policy, base: nil)
        #expect(againstRecorded.records == 3_000 && againstRecorded.replayed == 3_000)
        #expect(againstRecorded.totalFlips == 0 && againstRecorded.unreadableCount == 0)
        let againstBase = DecisionReplay.replay(lines: Self.lines(records), candidate: policy, base: policy)
        #expect(againstBase.totalFlips == 0 && againstBase.otherVersion == 0)
        #expect(ReplayRenderer.text(againstBase, candidate: "new", base: "old").contains("no decision changes"))
    }

    /// Lowering the free tier's sources limit from 50 to 40 flips exactly the free subjects' add_source records with
    /// 40 to 49 sources, from allow to deny for limit_exceeded: counted here independently of the engine.
    @Test func aLoweredLimitFlipsExactlyThePredictedRecords() throws {
        let base = try Self.crawler()
        let candidate = try Self.crawler { name, text in
            name == "tiers.yaml" ? text.replacingOccurrences(of: "free: 50", with: "free: 40") : text
        }
        #expect(base.contentHash != candidate.contentHash)
        let records = Self.records(6_000, decidedBy: base)
        let predicted = records.filter { r in
            r.request.action == "add_source" && r.request.subject.tier == "free" && (40..<50).contains(r.request.resource.usage["sources"] ?? 0)
        }
        try #require(!predicted.isEmpty)
        for base in [base, nil] as [CompiledPolicy?] {
            let report = DecisionReplay.replay(lines: Self.lines(records), candidate: candidate, base: base)
            #expect(report.totalFlips == predicted.count)
            #expect(report.flips(.allowToDeny) == predicted.count)
            #expect(report.groups.allSatisfy { $0.action == "add_source" && $0.from == .allowed && $0.to == .limitExceeded && $0.shape.hasPrefix("tier=free") })
            #expect(report.groups.allSatisfy { (1...3).contains($0.examples.count) && $0.examples.allSatisfy { $0.hasPrefix("u-") } })
            let json = ReplayRenderer.json(report, candidate: "new", base: base == nil ? nil : "old").rendered()
            #expect(json.contains(#""allowToDeny":\#(predicted.count)"#))
            let markdown = ReplayRenderer.markdown(report, candidate: "new", base: nil)
            #expect(markdown.contains("| `add_source` | allow-to-deny"))
        }
        // Records decided by the candidate itself are another version than the base: replayed anyway, and counted.
        let mixed = Self.records(10, decidedBy: candidate)
        let report = DecisionReplay.replay(lines: Self.lines(mixed), candidate: candidate, base: base)
        #expect(report.otherVersion == 10 && report.replayed == 10)
    }

    /// A record that does not parse any more is reported with its line and what is wrong; the rest are replayed.
    @Test func anUnreadableRecordIsReportedNotFatal() throws {
        let policy = try Self.crawler()
        let records = Self.records(20, decidedBy: policy)
        let broken = [
            "not json",
            #"{"effect": "deny", "reason": "default_deny", "policyHash": "x", "request": {"subject": {"tier": 3}, "action": "a", "resource": {"type": "app"}}}"#,
            #"{"effect": "deny", "reason": "default_deny", "policyHash": "x"}"#,
            "",
        ]
        let report = DecisionReplay.replay(lines: Self.lines(records, extra: broken), source: "decisions.jsonl", candidate: policy, base: nil)
        #expect(report.replayed == 20)
        #expect(report.unreadableCount == 3)
        #expect(report.unreadable.map(\.line) == [21, 22, 23])
        #expect(report.unreadable[1].message.hasPrefix("request.subject.tier"))
        #expect(report.unreadable[2].message.hasPrefix("request"))
        #expect(ReplayRenderer.text(report, candidate: "c", base: nil).contains("decisions.jsonl:22: request.subject.tier"))
    }

    /// `policy replay` reads the file's bytes (no string per line): the same report as the lines, unreadable records
    /// and their line numbers included, with and without a final newline.
    @Test func theFileAndItsLinesGiveTheSameReport() throws {
        let base = try Self.crawler()
        let candidate = try Self.crawler { name, text in
            name == "tiers.yaml" ? text.replacingOccurrences(of: "free: 50", with: "free: 40") : text
        }
        let records = Self.records(400, decidedBy: base)
        let extra = ["", "not json", #"{"effect": "allow", "reason": "allowed", "policyHash": "x", "request": null}"#, "   "]
        for trailer in ["", "\n"] {
            let text = (records.map(\.line) + extra).joined(separator: "\n") + trailer
            let fromLines = DecisionReplay.replay(lines: text.split(separator: "\n", omittingEmptySubsequences: false), candidate: candidate, base: nil)
            let fromBytes = Array(text.utf8).withUnsafeBytes { DecisionReplay.replay(bytes: $0, candidate: candidate, base: nil) }
            #expect(fromBytes.records == fromLines.records && fromBytes.records == 402)
            #expect(fromBytes.unreadable == fromLines.unreadable && fromBytes.unreadable.map(\.line) == [402, 403])
            #expect(fromBytes.groups == fromLines.groups && fromBytes.totalFlips > 0)
            #expect(fromBytes.policyVersions == [base.contentHash: 400])
        }
    }

    /// A record's own fields are strict where the replay needs them and lenient where a person or a later server added
    /// something: unknown fields are stepped over, a repeated or mistyped field is refused by name.
    @Test func aRecordLineIsReadStrictlyWhereTheReplayNeedsIt() throws {
        let request = #"{"subject": {"id": "u-1", "tier": "free"}, "action": "add_source", "resource": {"type": "app"}}"#
        let record = try DecisionRecord(
            line: #"{"id": 7, "at": "2026-11-22T12:00:00Z", "note": {"by": ["a", 1, null]}, "subject": null, "effect": "deny", "#
                + #""reason": "limit_exceeded", "policyHash": "abc", "request": \#(request)}"#)
        #expect(record.id == 7 && record.subject == nil && record.effect == .deny && record.reason == .limitExceeded)
        #expect(record.request.subject.tier == "free" && record.request.action == "add_source")
        let cases: [(String, String)] = [
            (#"{"effect": "allow", "effect": "deny", "reason": "allowed", "policyHash": "x", "request": \#(request)}"#, "effect"),
            (#"{"effect": "maybe", "reason": "allowed", "policyHash": "x", "request": \#(request)}"#, "effect"),
            (#"{"effect": "allow", "reason": "allowed", "policyHash": 3, "request": \#(request)}"#, "policyHash"),
            (#"{"effect": "allow", "policyHash": "x", "request": \#(request)}"#, "reason"),
            (#"{"effect": "allow", "reason": "allowed", "policyHash": "x", "request": {"action": "a"}}"#, "request.resource"),
            (#"{"effect": "allow", "reason": "allowed", "policyHash": "x", "request": \#(request)} trailing"#, ""),
            ("[1, 2]", ""),
        ]
        for (line, field) in cases {
            #expect(throws: RequestError.self, "\(line)") { _ = try DecisionRecord(line: line) }
            do { _ = try DecisionRecord(line: line) } catch { #expect(error.field == field, "\(line): \(error)") }
        }
    }
}
