import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
@testable import PolicyVerification
import GatehouseTestSupport

@Suite struct InvariantProverTests {
    @Test(arguments: ["contacasal", "mimisupply", "research-crawler"])
    func shippedSetsProveTheirInvariants(_ name: String) {
        let result = shipped(name)
        #expect(!result.diagnostics.hasErrors)
        let report = InvariantProver.prove(result)
        #expect(report.results.count >= 8)
        for r in report.results {
            #expect(r.passed, "\(name): \(r.name): \(r.counterexample.map { $0.request.json.rendered(pretty: false) } ?? "")")
            #expect(r.checked > 0, "\(name): \(r.name) selected nothing")
        }
        // The shipped sets use only comparisons with literals: every invariant is a proof, not a sample.
        #expect(!report.diagnostics.contains { $0.code == "space-not-exhaustive" || $0.code == "invariant-not-proved" })
        #expect(!report.diagnostics.hasErrors)
    }

    @Test func aGrantTooManyBreaksAnInvariantWithACounterexample() throws {
        var files = try shippedFiles("research-crawler")
        let index = try #require(files.firstIndex { $0.0.hasSuffix("projects.yaml") })
        files[index].1 = files[index].1.replacingOccurrences(of: "grants: [edit]}", with: "grants: [edit, delete]}")
        let report = InvariantProver.prove(load(files))
        let failed = report.results.filter { !$0.passed }.map(\.name)
        #expect(failed == ["only the owner deletes or invites"])
        let counterexample = try #require(report.results.first { !$0.passed }?.counterexample)
        #expect(counterexample.request.action == "delete")
        #expect(counterexample.request.resource.members.values.contains("editor"))
        #expect(counterexample.expected == "deny with reason access_denied or owner_only")
        #expect(counterexample.explanation.decision.effect == .allow)
        #expect(counterexample.explanation.trace.contains { $0.check == "membership" && $0.outcome == .pass })
        // The counterexample is a real request: deciding it again gives the same allow.
        let policy = try #require(load(files).policy)
        #expect(policy.decide(counterexample.request).effect == .allow)
    }

    /// A door that opens at exactly one value of a counter and after a date is found: boundaries are tried.
    @Test func aDoorAtOneBoundaryValueIsFound() throws {
        let report = InvariantProver.prove(load("""
            tiers: {free: {default: true}}
            resources:
              doc:
                actions:
                  open: {signIn: true}
            rules:
              - name: door
                effect: allow
                resources: [doc]
                actions: "*"
                when: resource.usage.n == 7 && context.now >= timestamp("2027-01-01T00:00:00Z")
            invariants:
              - name: signed-out never opens
                when: {subject: signed-out}
                expect: deny
            """))
        let result = try #require(report.results.first)
        let counterexample = try #require(result.counterexample)
        #expect(counterexample.request.resource.usage["n"] == 7)
        #expect(counterexample.request.context.now.map(Timestamp.format) == "2027-01-01T00:00:00Z")
        #expect(counterexample.request.subject.id == nil)
    }

    @Test func freshnessIsTriedOnBothSidesOfMaxAge() throws {
        let report = InvariantProver.prove(load("""
            resources:
              account:
                actions:
                  close: {auth: {methods: [pin], maxAge: 5m}}
            invariants:
              - name: a PIN always closes
                when: {auth: pin, subject: signed-in}
                expect: allow
            """))
        let counterexample = try #require(report.results.first?.counterexample)
        let age = try #require(counterexample.request.subject.auth?.verifiedAt).distance(to: try #require(counterexample.request.context.now))
        #expect(age == 301)
        #expect(counterexample.explanation.decision.reason == .stepUpRequired)
    }

    @Test func conditionsThatCannotBePinnedToBoundariesAreSampledNotProved() {
        let report = InvariantProver.prove(load("""
            attributes:
              subject: {nickname: string}
            resources:
              doc:
                actions:
                  open: {signIn: true}
            rules:
              - name: long names
                effect: deny
                resources: [doc]
                actions: "*"
                when: has(subject.attributes.nickname) && size(subject.attributes.nickname) > 3
            invariants:
              - name: signed-out never opens
                when: {subject: signed-out}
                expect: deny
            """))
        #expect(report.results.first?.passed == true)
        #expect(report.diagnostics.contains { $0.code == "space-not-exhaustive" && $0.message.contains("size()") && $0.location?.line == 12 })
        #expect(report.diagnostics.contains { $0.code == "invariant-not-proved" })
    }

    @Test func namesInAnInvariantAreCheckedWithSuggestions() {
        let report = InvariantProver.prove(load([("policy.yaml", """
            resources:
              project:
                roles: {editor: {grants: [edit]}}
                actions: {edit: {}}
            invariants:
              - name: typo
                when: {role: editr, action: edti}
                expect: deny
              - name: nothing
                when: {resource: project, subject: anonymous, role: editor}
                expect: deny
            """)]))
        let errors = report.diagnostics.filter { $0.severity == .error }
        #expect(errors.map(\.message) == ["unknown role 'editr' in invariant 'typo'", "unknown action 'edti' in invariant 'typo'"])
        #expect(errors.first?.help.first?.contains("did you mean 'editor'?") == true)
        #expect(errors.first?.location?.description == "policy.yaml:7:18")
        #expect(report.results.map(\.name) == ["nothing"])
        #expect(report.diagnostics.contains { $0.code == "invariant-selects-nothing" })
    }

    @Test func invariantSyntaxErrorsAreLoadErrors() {
        let result = load("""
            resources:
              doc: {actions: {open: {}}}
            invariants:
              - name: bad
                when: {rol: editor}
                expect: dney
            """)
        #expect(result.diagnostics.map(\.code) == ["unknown-key", "invalid-expect"])
        #expect(result.diagnostics.last?.help.first?.contains("did you mean 'deny'?") == true)
        #expect(result.diagnostics.first?.help.first?.contains("did you mean 'role'?") == true)
    }

    /// The compiler refuses empty messages and every reason has a built-in one, so no set that loads denies
    /// silently; the invariant still guards the engine, and is checked here on a decision made by hand.
    @Test func theMessageInvariantRefusesADenyWithoutAMessage() throws {
        let result = load("""
            resources:
              doc: {actions: {open: {}}}
            invariants:
              - name: every deny carries a message
                expect: deny-has-message
            """)
        let policy = try #require(result.policy)
        var diagnostics: [Diagnostic] = []
        let invariant = try #require(CheckedInvariant(result.declarations.invariants[0], policy: policy, declarations: result.declarations, diagnostics: &diagnostics))
        #expect(invariant.violation(Decision(effect: .deny, reason: .deniedByRule)) == "a message on the deny")
        #expect(invariant.violation(Decision(effect: .deny, reason: .deniedByRule, message: "")) == "a message on the deny")
        #expect(invariant.violation(Decision(effect: .deny, reason: .deniedByRule, message: "No.")) == nil)
        #expect(invariant.violation(Decision(effect: .allow, reason: .allowed)) == nil)
        #expect(InvariantProver.prove(result).results.first?.passed == true)
    }

}

/// The boundary argument, tested: over random requests, every combination of condition outcomes that occurs
/// also occurs somewhere in the enumerated space.
@Suite struct SpaceCompletenessTests {
    @Test func everyConditionOutcomeSeenOnRandomRequestsIsInTheSpace() throws {
        let result = load("""
            attributes:
              resource: {amount: int, score: double, due: timestamp, status: {enum: [draft, sent]}, label: string}
            resources:
              invoice:
                actions:
                  pay: {}
            rules:
              - {name: a, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.amount > 500"}
              - {name: b, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.amount + 10 < 20"}
              - {name: c, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.amount == 250"}
              - {name: d, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.score > 2.5"}
              - {name: e, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.score <= 7"}
              - {name: f, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.due < context.now - duration('1h')"}
              - {name: g, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.status == 'sent'"}
              - {name: h, effect: deny, resources: [invoice], actions: '*', when: "resource.attributes.label in ['x', 'y']"}
              - {name: i, effect: allow, resources: [invoice], actions: '*', when: "resource.usage.items != 3"}
            """)
        let policy = try #require(result.policy, "\(result.diagnostics.map(\.message))")
        let space = try #require(RequestSpace.build([policy]).first)
        #expect(space.gaps.isEmpty)
        func signature(_ request: Request) -> [Bool?] {
            policy.withConditionInput(for: request) { input in policy.rules.map { $0.condition!.evaluate(input) } }!
        }
        var inSpace = Set<[Bool?]>()
        space.forEach { inSpace.insert(signature(space.request($0))) }

        var rng = SplitMix(seed: 42)
        let now = Date(timeIntervalSince1970: RequestSpace.baseNow)
        for _ in 0..<20_000 {
            var resource = Resource(type: "invoice")
            if rng.next() % 5 != 0 { resource.attributes["amount"] = .int(rng.next() % 3 == 0 ? 250 : Int(rng.next() % 1200) - 100) }
            if rng.next() % 5 != 0 { resource.attributes["score"] = .double(Double(rng.next() % 1000) / 100 + (rng.next() % 2 == 0 ? 0.005 : 0)) }
            if rng.next() % 5 != 0 {
                resource.attributes["due"] = .string(Timestamp.format(now.addingTimeInterval(Double(Int(rng.next() % 14_400) - 7_200))))
            }
            if rng.next() % 5 != 0 { resource.attributes["status"] = .string(rng.next() % 2 == 0 ? "draft" : "sent") }
            if rng.next() % 5 != 0 { resource.attributes["label"] = .string(["x", "y", "z", ""][Int(rng.next() % 4)]) }
            resource.usage["items"] = Int(rng.next() % 6)
            let request = Request(subject: Subject(), action: "pay", resource: resource, context: Context(now: now))
            let s = signature(request)
            let found = inSpace.contains(s)
            #expect(found, "outcome \(s) of \(request.json.rendered(pretty: false)) is missing from the space")
            if !found { break }
        }
    }
}

typealias SplitMix = SeededRandom

func shippedFiles(_ name: String) throws -> [(String, String)] {
    let dir = repositoryRoot + "/policies/" + name
    return try PolicyCompiler.policyFiles(in: dir).map { ($0, try String(contentsOfFile: $0, encoding: .utf8)) }
}
