import Foundation
import FuzzSupport
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

/// libFuzzer entry for the `policy replay` record reader (`DecisionRecord(line:)`, JSON lines from `policy log
/// export`) and `DecisionReplay.replay` over the shipped research-crawler set. Besides a trap or hang, a finding is: a
/// record read that does not read back the same from its own JSON line; a refusal without a message; a report whose
/// counts do not add up (records = replayed + unreadable, flips at most the records replayed, unreadable lines kept
/// at most 20 and numbered within the input); any flip when the base and the candidate are the same set.
public func fuzzReplayRecords(_ raw: UnsafeRawBufferPointer) {
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: raw[...]), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    for line in lines where line.contains(where: { !$0.isWhitespace }) {
        do {
            let record = try DecisionRecord(line: line)
            let written = record.json.rendered(pretty: false)
            guard let again = try? DecisionRecord(line: written) else { finding("a record's own line does not read back: \(written)") }
            if again != record { finding("a record reads back differently: \(written)") }
        } catch {
            if error.message.isEmpty { finding("a refused record without a message") }
        }
    }
    let policy = Shipped.policy
    for base in [nil, policy] {
        let report = DecisionReplay.replay(lines: lines, source: "fuzz", candidate: policy, base: base)
        if report.records != report.replayed + report.unreadableCount { finding("records \(report.records) != replayed \(report.replayed) + unreadable \(report.unreadableCount)") }
        if report.totalFlips > report.replayed { finding("more flips than records replayed") }
        if report.unreadable.count > ReplayReport.maxUnreadableKept || report.unreadable.contains(where: { $0.line < 1 || $0.line > lines.count }) {
            finding("unreadable lines kept wrongly")
        }
        if base != nil, report.totalFlips != 0 { finding("\(report.totalFlips) flips replaying a set against itself") }
    }
}

enum Shipped {
    static let policy: CompiledPolicy = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("policies/research-crawler").path
        guard let policy = PolicyCompiler.load(directory: folder).policy else { fatalError("the replay fuzz target needs \(folder)") }
        return policy
    }()
}
