import Foundation
@testable import Gatehouse
import Testing

/// `policy serve --shadow DIR` (issue 37, item 4): a candidate decided beside the live set after each answer.
@Suite struct ShadowEvaluatorTests {
    /// A copy of research-crawler with `edit` applied to tiers.yaml, in a fresh folder.
    static func candidate(_ edit: (String) -> String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-shadow-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: Facade.root.appendingPathComponent("policies/research-crawler"), to: dir)
        let tiers = dir.appendingPathComponent("tiers.yaml")
        try Data(edit(try String(contentsOf: tiers, encoding: .utf8)).utf8).write(to: tiers)
        return dir
    }

    /// The free sources limit lowered from 50 to 40 in the candidate: answers are the live set's, and the shadow counts
    /// exactly the free add_source decisions with 40 to 49 sources as allowed -> limit_exceeded.
    @Test func theCandidateCountsExactlyThePredictedDisagreementsAndChangesNoAnswer() async throws {
        let shadow = ShadowEvaluator(directory: try Self.candidate { $0.replacingOccurrences(of: "free: 50", with: "free: 40") }.path)
        #expect(shadow.candidate.policy != nil && shadow.candidate.refused.isEmpty)
        let f = try Facade(policySet: "research-crawler", trust: true)
        let gate = GatehouseService(policy: f.gate.policy, identity: f.identity, shadow: shadow, trustCallerSubjects: true)
        var predicted = 0
        for i in 0..<600 {
            let tier = ["free", "pro", "team"][i % 3]
            let used = i % 60
            let request = Request(
                subject: Subject(id: "u\(i % 7)", tier: tier, auth: Authentication(method: "pin", verifiedAt: Date())), action: i % 2 == 0 ? "add_source" : "cloud_sync",
                resource: Resource(type: "app", usage: ["sources": used]))
            let answer = try await gate.decide(request, bearer: nil, by: gate.policy)
            #expect(answer == (try await f.gate.decide(request, bearer: nil, by: f.gate.policy)))
            if tier == "free", i % 2 == 0, (40..<50).contains(used) { predicted += 1 }
        }
        await shadow.flush()
        let counts = shadow.counts
        #expect(counts.values.reduce(0, +) == 600)
        let disagreements = counts.filter { $0.key.live != $0.key.shadow }
        #expect(disagreements.count == 1)
        #expect(disagreements.first?.key == ShadowEvaluator.Pair(action: "add_source", live: .allowed, shadow: .limitExceeded))
        #expect(disagreements.first?.value == predicted)
        #expect(!shadow.samples.isEmpty && shadow.samples.allSatisfy { $0.live == .allowed && $0.shadow == .limitExceeded })
    }

    /// The samples are the newest disagreements, oldest first, however the queue was batched: 130 disagreements
    /// offered in three bursts leave exactly the last `maxSamples`, in the order they were decided.
    @Test func theSamplesAreTheNewestDisagreementsInOrder() async throws {
        let shadow = ShadowEvaluator(directory: try Self.candidate { $0.replacingOccurrences(of: "free: 50", with: "free: 40") }.path)
        let f = try Facade(policySet: "research-crawler", trust: true)
        let gate = GatehouseService(policy: f.gate.policy, identity: f.identity, shadow: shadow, trustCallerSubjects: true)
        var disagreeing: [String] = []
        for burst in [7, 90, 33] {
            for _ in 0..<burst {
                let id = "u\(disagreeing.count)"
                // Every other request agrees (pro has no sources limit), so agreements sit between the samples.
                for tier in ["free", "pro"] {
                    let request = Request(
                        subject: Subject(id: id, tier: tier), action: "add_source", resource: Resource(type: "app", usage: ["sources": 45]))
                    _ = try await gate.decide(request, bearer: nil, by: gate.policy)
                }
                disagreeing.append(id)
            }
            await shadow.flush()
        }
        #expect(shadow.samples.map { $0.request.subject.id ?? "" } == Array(disagreeing.suffix(ShadowEvaluator.maxSamples)))
        #expect(shadow.counts[ShadowEvaluator.Pair(action: "add_source", live: .allowed, shadow: .limitExceeded)] == disagreeing.count)
        #expect(shadow.counts.values.reduce(0, +) == 2 * disagreeing.count)
    }

    /// A candidate that does not compile is reported, not decided; fixing it reloads it.
    @Test func aBrokenCandidateIsReportedNotDecided() async throws {
        let dir = try Self.candidate { $0 + "\nlimits: [not, a, map\n" }
        let shadow = ShadowEvaluator(directory: dir.path)
        #expect(shadow.candidate.policy == nil && !shadow.candidate.refused.isEmpty)
        let f = try Facade(policySet: "research-crawler", trust: true)
        let gate = GatehouseService(policy: f.gate.policy, identity: f.identity, shadow: shadow, trustCallerSubjects: true)
        _ = try await gate.decide(Request(action: "add_source", resource: Resource(type: "app")), bearer: nil, by: gate.policy)
        await shadow.flush()
        #expect(shadow.counts.isEmpty)
        try FileManager.default.removeItem(at: dir)
        try FileManager.default.copyItem(at: Facade.root.appendingPathComponent("policies/research-crawler"), to: dir)
        #expect(!shadow.reload().contains { $0.severity == .error })
        #expect(shadow.candidate.policy != nil && shadow.candidate.refused.isEmpty)
    }
}
