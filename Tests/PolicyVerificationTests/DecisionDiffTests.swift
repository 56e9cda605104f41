import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
@testable import PolicyVerification

@Suite struct DecisionDiffTests {
    func edited(_ edits: [(file: String, from: String, to: String)]) throws -> (CompiledPolicy, CompiledPolicy) {
        let files = try shippedFiles("research-crawler")
        var changed = files
        for edit in edits {
            let i = try #require(changed.firstIndex { $0.0.hasSuffix(edit.file) })
            #expect(changed[i].1.contains(edit.from))
            changed[i].1 = changed[i].1.replacingOccurrences(of: edit.from, with: edit.to)
        }
        return (try #require(load(files).policy), try #require(load(changed).policy))
    }

    @Test func aSetComparedWithItselfChangesNothing() throws {
        let policy = try #require(shipped("research-crawler").policy)
        let diff = PolicyDiffer.diff(old: policy, new: policy)
        #expect(diff.changed == 0 && diff.changes.isEmpty && diff.widening == 0)
        #expect(diff.requests > 0)
    }

    @Test func anEditorGainingDeleteIsOneReadableGroup() throws {
        let (old, new) = try edited([("projects.yaml", "grants: [edit]}", "grants: [edit, delete]}")])
        let diff = PolicyDiffer.diff(old: old, new: new)
        let gains = diff.changes.filter(\.isWidening)
        #expect(gains.map(\.summary) == ["subject signed in, role editor gains 'delete' on project"])
        #expect(gains.first?.from == Outcome(Decision(effect: .deny, reason: .ownerOnly)))
        #expect(diff.widening == gains.map(\.requests).reduce(0, +))
        // Viewers and commenters are still refused, now because a member role could grant it.
        #expect(diff.changes.contains { $0.summary == "subject signed in, role viewer or commenter is refused differently for 'delete' on project" })
    }

    @Test func theDiffMatchesBruteForceThroughDecide() throws {
        let (old, new) = try edited([
            ("projects.yaml", "grants: [edit]}", "grants: [edit, delete]}"),
            ("tiers.yaml", "    tiers: [team]", "    tiers: [pro, team]"),
            ("tiers.yaml", "      free: 50", "      free: 20"),
        ])
        let diff = PolicyDiffer.diff(old: old, new: new)

        // Brute force over the same space: decide every request with both policies.
        var flips: [String: Int] = [:]
        var total = 0
        for space in RequestSpace.build([old, new]) {
            space.forEach { point in
                total += 1
                let request = space.request(point)
                let (a, b) = (Outcome(old.decide(request)), Outcome(new.decide(request)))
                if a != b { flips["\(space.type).\(space.action) \(a) -> \(b)", default: 0] += 1 }
            }
        }
        var reported: [String: Int] = [:]
        for change in diff.changes {
            reported["\(change.resourceType).\(change.action) \(change.from) -> \(change.to)", default: 0] += change.requests
            // Each group's example really flips that way.
            #expect(Outcome(old.decide(change.example)) == change.from && Outcome(new.decide(change.example)) == change.to)
        }
        #expect(reported == flips)
        #expect(diff.requests == total)
        #expect(diff.changed == flips.values.reduce(0, +))
        #expect(flips.keys.contains("app.add_source deny (limit_exceeded) -> allow") == false)
        #expect(flips.keys.contains("app.add_source allow -> deny (limit_exceeded)"))

        // Random requests outside the space: every flip they show is a flip the diff reports for that action.
        var rng = SplitMix(seed: 7)
        let tiers = ["free", "pro", "academic", "team", "gold"]
        let actions = [("app", "collaboration"), ("app", "add_source"), ("project", "delete"), ("project", "edit"), ("app", "cloud_sync")]
        let now = Date(timeIntervalSince1970: 1_795_348_800)
        for _ in 0..<20_000 {
            let (type, action) = actions[Int(rng.next() % UInt64(actions.count))]
            var subject = Subject(id: rng.next() % 6 == 0 ? nil : "u\(rng.next() % 3)", tier: tiers[Int(rng.next() % 5)])
            if rng.next() % 4 == 0 { subject.subscriptionExpiry = now.addingTimeInterval(Double(Int(rng.next() % 200)) - 100) }
            var resource = Resource(type: type, ownerId: "u\(rng.next() % 4)")
            if rng.next() % 2 == 0 { resource.members["u\(rng.next() % 3)"] = ["viewer", "commenter", "editor", "owner"][Int(rng.next() % 4)] }
            resource.usage["sources"] = Int(rng.next() % 80)
            let request = Request(subject: subject, action: action, resource: resource, context: Context(now: now))
            let (a, b) = (Outcome(old.decide(request)), Outcome(new.decide(request)))
            guard a != b else { continue }
            let key = "\(type).\(action) \(a) -> \(b)"
            #expect(reported[key] != nil, "\(key) for \(request.json.rendered(pretty: false)) is not in the diff")
            if reported[key] == nil { break }
        }
    }
}
