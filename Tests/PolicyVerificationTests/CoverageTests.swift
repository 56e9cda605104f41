import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification
import Testing

/// Coverage counted from explain traces: every kind of requirement is recognized in both outcomes (so a
/// renamed trace step cannot silently stop counting), and outcomes no request can reach are not items.
@Suite struct CoverageTests {
    static let policy = """
        tiers:
          free: {name: Free, default: true}
          pro: {name: Pro}
        features:
          export: {name: Export, tiers: [pro]}
          basics: {name: Basics, tiers: [free, pro]}
        limits:
          notes: {name: notes, tiers: {free: 1}}
        appRoles:
          admin: {name: Admin}
        attributes:
          subject:
            analytics: bool
        resources:
          app:
            actions:
              export: {feature: export}
              basics: {feature: basics}
              add_note: {limit: notes}
              console: {appRoles: [admin]}
              pay: {auth: {methods: [pin], maxAge: 5m}}
              track: {consent: {name: analytics, when: has(subject.attributes.analytics) && subject.attributes.analytics}}
              leak: {consent: {name: notes, when: false}}
          doc:
            owner: ownerId
            roles:
              editor: {grants: [edit]}
            actions:
              edit: {}
        rules:
          - name: no-admin-leaks
            effect: deny
            actions: [leak]
            when: '"admin" in subject.roles'
          - name: pro-edits-anyway
            effect: allow
            resources: [doc]
            actions: [edit]
            when: subject.tier == "pro"
        """

    static let tests = """
        tests:
          - {name: t1, request: {subject: {id: u, tier: pro}, action: export, resource: {type: app}}, expect: {decision: allow}}
          - {name: t2, request: {subject: {id: u}, action: export, resource: {type: app}}, expect: {decision: deny}}
          - {name: t3, request: {subject: {id: u}, action: basics, resource: {type: app}}, expect: {decision: allow}}
          - {name: t4, request: {subject: {id: u}, action: add_note, resource: {type: app}}, expect: {decision: allow}}
          - {name: t5, request: {subject: {id: u}, action: add_note, resource: {type: app, usage: {notes: 1}}}, expect: {decision: deny}}
          - {name: t6, request: {subject: {id: u, roles: [admin]}, action: console, resource: {type: app}}, expect: {decision: allow}}
          - {name: t7, request: {subject: {id: u}, action: console, resource: {type: app}}, expect: {decision: deny}}
          - {name: t8, request: {action: console, resource: {type: app}}, expect: {decision: deny}}
          - name: t9
            request: {subject: {id: u, auth: {method: pin, verifiedAt: "2026-01-01T00:00:00Z"}}, action: pay, resource: {type: app}, context: {now: "2026-01-01T00:01:00Z"}}
            expect: {decision: allow}
          - {name: t10, request: {subject: {id: u}, action: pay, resource: {type: app}}, expect: {decision: deny}}
          - {name: t11, request: {action: pay, resource: {type: app}}, expect: {decision: deny}}
          - {name: t12, request: {subject: {id: u, attributes: {analytics: true}}, action: track, resource: {type: app}}, expect: {decision: allow}}
          - {name: t13, request: {subject: {id: u}, action: track, resource: {type: app}}, expect: {decision: deny}}
          - {name: t14, request: {subject: {id: u}, action: leak, resource: {type: app}}, expect: {decision: deny}}
          - {name: t15, request: {subject: {id: u, roles: [admin]}, action: leak, resource: {type: app}}, expect: {reason: denied_by_rule}}
          - {name: t16, request: {subject: {id: a}, action: edit, resource: {type: doc, ownerId: a}}, expect: {decision: allow}}
          - {name: t17, request: {subject: {id: b}, action: edit, resource: {type: doc, ownerId: a}}, expect: {decision: deny}}
          - {name: t18, request: {subject: {id: b, tier: pro}, action: edit, resource: {type: doc, ownerId: a}}, expect: {decision: allow}}
          - {name: t19, request: {action: edit, resource: {type: doc, ownerId: a}}, expect: {decision: deny}}
        """

    static func check(tests: String) throws -> SetReport {
        let files = [
            PolicyFileInput(path: "c/app.yaml", bytes: Array(policy.utf8)), PolicyFileInput(path: "c/tests.yaml", bytes: Array(tests.utf8)),
        ]
        let result = PolicyCompiler.compile(name: "c", files: files)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
        let report = CheckRunner.check(result, path: "c", options: CheckOptions(coverage: true))
        for test in report.tests { #expect(test.passed, "\(test.name): \(test.failures)") }
        return report
    }

    @Test func everyRequirementAndBranchIsRecognizedInBothOutcomes() throws {
        let coverage = try #require(try Self.check(tests: Self.tests).coverage)
        #expect(coverage.uncovered.map(\.name) == [])
        #expect(coverage.percent == 100)
        let kinds = Set(coverage.items.map(\.kind))
        #expect(kinds == [.rule, .condition, .requirement])
        for label in ["sign-in", "auth", "app role", "membership", "feature export", "limit notes", "consent"] {
            #expect(coverage.items.contains { $0.name.contains(": \(label) passes") }, "\(label) passes")
            #expect(coverage.items.contains { $0.name.contains(": \(label) fails") }, "\(label) fails")
        }
    }

    @Test func unreachableOutcomesAreNotItems() throws {
        let coverage = try #require(try Self.check(tests: "tests: []").coverage)
        let names = Set(coverage.items.map(\.name))
        #expect(coverage.covered == 0)
        // A feature every tier has never fails; consent that can never be given never passes.
        #expect(names.contains("app.basics: feature basics passes") && !names.contains("app.basics: feature basics fails"))
        #expect(names.contains("app.leak: consent fails") && !names.contains("app.leak: consent passes"))
        #expect(names.contains("deny rule no-admin-leaks: condition true") && names.contains("deny rule no-admin-leaks: condition false"))
        #expect(coverage.files.map(\.file) == ["c/app.yaml"])
        #expect(coverage.files[0].total == coverage.total)
    }

    /// Coverage is counted from the engine's events: rewording every explain line, or dropping the text altogether,
    /// changes nothing (before the events, it matched on "deny rule ", "feature " ... and this would drop to 0).
    @Test func coverageDoesNotDependOnTheTracesWording() throws {
        let files = [
            PolicyFileInput(path: "c/app.yaml", bytes: Array(Self.policy.utf8)), PolicyFileInput(path: "c/tests.yaml", bytes: Array(Self.tests.utf8)),
        ]
        let result = PolicyCompiler.compile(name: "c", files: files)
        let policy = try #require(result.policy)
        let results = PolicyTestRunner.run(result)
        let reworded = results.map { test in
            var test = test
            test.trace = test.trace.map { TraceStep(check: "Prüfung " + $0.check.uppercased(), outcome: .info, detail: "", location: nil) }
            return test
        }
        let silent = results.map { test in
            var test = test
            test.trace = []
            return test
        }
        let original = Coverage.measure(policy, tests: results)
        #expect(original.percent == 100)
        #expect(Coverage.measure(policy, tests: reworded) == original)
        #expect(Coverage.measure(policy, tests: silent) == original)
    }

    @Test func percentagesRoundDownSoAMinimumIsNeverMetByRounding() {
        #expect(Coverage.format(Coverage.percent(2, of: 3)) == "66.6%")
        #expect(Coverage.format(Coverage.percent(9999, of: 10000)) == "99.9%")
        #expect(Coverage.format(Coverage.percent(0, of: 0)) == "100.0%")
        #expect(Coverage.format(Coverage.percent(1, of: 8)) == "12.5%")
    }
}
