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
}
