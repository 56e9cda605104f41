import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification
import Testing

/// Loader and engine behaviours pinned on small inline policy sets.
@Suite struct LoaderBehaviourTests {
    static func compile(_ yaml: String) -> PolicyLoadResult {
        PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array(yaml.utf8))])
    }

    @Test func ampersandsAndStarsInTextAreNotAliases() {
        let result = Self.compile("""
            # a comment with &anchor and *alias
            resources:
              app:
                actions:
                  export:
                    messages:
                      default_deny: "Tom & *Jerry* &co"
                      unauthenticated: 'it''s *here* & there'
                      denied_by_rule: |
                        &not an anchor
                        *not an alias
                      access_denied: rock & roll * 2
            """)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
        #expect(result.policy != nil)
    }

    @Test func aliasesInFlowAndBlockPositionsAreRefused() {
        for yaml in ["a: [1, &x 2]\n", "a: {k: *x}\n", "- &x foo\n", "a:\n  - !!str x\n"] {
            let result = Self.compile(yaml)
            #expect(result.policy == nil)
            #expect(result.diagnostics.contains { $0.code == "yaml-alias" || $0.code == "yaml-tag" }, "\(yaml)")
        }
    }

    @Test func conditionErrorsInBlockScalarsPointAtTheContentLine() {
        let result = Self.compile("""
            resources:
              app:
                actions:
                  export: {}
            rules:
              - effect: deny
                actions: [export]
                when: >-
                  subject.signedIn
                  && subject.tierr == "pro"
            """)
        let error = result.diagnostics.first { $0.code == "unknown-field" }
        #expect(error?.location == SourceLocation(file: "t.yaml", line: 10, column: 18))
    }

    @Test func aMemberRoleNamedOwnerIsNotOwnershipUnlessDeclared() throws {
        // Without `ownerRole`, only the owner field grants ownership: a member whose role string
        // happens to be "owner" must not inherit every action.
        let result = Self.compile("""
            resources:
              doc:
                owner: ownerId
                roles:
                  reader: {grants: [read]}
                actions:
                  read: {}
                  destroy: {}
            """)
        let policy = try #require(result.policy)
        let member = Request(
            subject: Subject(id: "bob"), action: "destroy",
            resource: Resource(type: "doc", ownerId: "alice", members: ["bob": "owner"]))
        #expect(policy.decide(member).reason == .ownerOnly)
        var owner = member
        owner.subject.id = "alice"
        #expect(policy.decide(owner).isAllowed)
    }

    @Test func anInvalidTestRequestNamesTheFieldAndItsLine() throws {
        let result = Self.compile("""
            resources:
              app:
                actions:
                  export: {}
            tests:
              - name: bad usage
                request:
                  action: export
                  resource:
                    type: app
                    usage: {sources: many}
                expect: {decision: allow}
            """)
        let test = try #require(PolicyTestRunner.run(result).first)
        #expect(!test.passed)
        #expect(test.location == SourceLocation(file: "t.yaml", line: 11, column: 26))
        #expect(test.failures.first?.contains("resource.usage.sources: expected an integer") == true)
    }

    // Found by PolicySetDifferentialTests (shipped research-crawler, seed 20261122): usage at Int.min on an
    // allowed, capped action trapped computing `remaining`, so one request could crash the process.
    @Test func usageAtTheIntegerExtremesDoesNotTrap() throws {
        let policy = try #require(Self.compile("""
            tiers: {free: {default: true}}
            limits: {sources: {tiers: {free: 50}}}
            resources: {app: {actions: {add_source: {limit: sources}}}}
            """).policy)
        var request = Request(subject: Subject(id: "u1"), action: "add_source", resource: Resource(type: "app", usage: ["sources": Int.min]))
        let allowed = policy.decide(request)
        #expect(allowed.isAllowed)
        #expect(allowed.used == Int.min && allowed.remaining == Int.max && allowed.limit == 50)
        #expect(policy.decideUnindexed(request) == allowed)
        request.resource.usage["sources"] = Int.max
        let denied = policy.decide(request)
        #expect(denied.reason == .limitExceeded && denied.used == Int.max && denied.remaining == 0)
    }

    // Found by PolicySetDifferentialTests: a message written as "" compiled, and every deny using it
    // carried an empty message, though the contract promises a message on every deny.
    @Test func emptyMessagesAreRefused() {
        for yaml in [
            "resources: {app: {actions: {a: {signIn: true}}}}\nmessages: {unauthenticated: \"\"}\n",
            "resources: {app: {actions: {a: {messages: {unauthenticated: '  '}, signIn: true}}}}\n",
            "resources: {app: {actions: {a: {}}}}\nrules: [{effect: deny, actions: [a], message: \"\"}]\n",
        ] {
            let result = Self.compile(yaml)
            #expect(result.policy == nil, "\(yaml)")
            #expect(result.diagnostics.map(\.code) == ["empty-message"], "\(yaml)")
        }
    }

    // Found by the read-back check of PolicySetDifferentialTests: a folded (`>-`) condition followed by a
    // blank line kept that line in its source, so explain traces showed a trailing line break.
    @Test func foldedConditionsEndWithTheirLastLine() throws {
        let policy = try #require(Self.compile("""
            resources:
              app:
                actions:
                  send:
                    consent:
                      when: >-
                        subject.signedIn
                        && subject.signedIn

            """).policy)
        let explanation = policy.explain(Request(subject: Subject(id: "u1"), action: "send", resource: Resource(type: "app")))
        let consent = try #require(explanation.trace.first { $0.check == "consent" })
        #expect(consent.detail == "subject.signedIn\n&& subject.signedIn")
    }

    // Found by scripts/fuzz.sh policy-compile (crash-e574bcfd...): a 20-digit maxAge compiled, and decide
    // trapped converting it to Int while writing the step-up message for a subject that was not verified.
    // Found by the policy-compile fuzz target in a fresh clone's smoke step (5 s): a set whose resource types declare
    // no action compiled clean, though it denies every request, as a set with no resource type (an error) does.
    @Test func aSetWithNoActionIsRefused() {
        for yaml in ["resources: {app: {actions: {}}}\n", "resources: {app: {actions: {}}, project: {actions: {}}}\n"] {
            let result = Self.compile(yaml)
            #expect(result.policy == nil, "\(yaml)")
            #expect(result.diagnostics.map(\.code) == ["no-actions"], "\(yaml)")
        }
        #expect(Self.compile("resources: {app: {actions: {}}, project: {actions: {view: {}}}}\n").policy != nil)
    }

    @Test func maxAgeMustBeAReasonableWindow() throws {
        let crash = """
            limits: {l: {tiers: {free: 9223372036854775780}}}
            tiers: {free: {}}
            resources: {app: {actions: {a: {limit: l, auth: {maxAge: 99999999999999999999h}}}}}
            """
        #expect(Self.compile(crash).diagnostics.map(\.code) == ["invalid-duration"])
        #expect(Self.compile("resources: {app: {actions: {a: {auth: {maxAge: -1s}}}}}").diagnostics.map(\.code) == ["invalid-duration"])
        let century = try #require(Self.compile("resources: {app: {actions: {a: {auth: {methods: [pin], maxAge: 876000h}}}}}").policy)
        let decision = century.decide(Request(subject: Subject(id: "u1", auth: Authentication(method: "apple")), action: "a", resource: Resource(type: "app")))
        #expect(decision.reason == .stepUpRequired && decision.message?.isEmpty == false)
    }
}
