import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
import GatehouseTestSupport

/// The engine's flat action table, pre-rendered messages and prepared handles decide exactly as the plain path.
@Suite struct DecisionTableTests {
    static let root = Repository.root
    static let now = Date(timeIntervalSince1970: 1_795_348_800)

    static func compile(_ yaml: String) throws -> CompiledPolicy {
        let result = PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array(yaml.utf8))])
        return try #require(result.policy, "\(result.diagnostics.map(\.message))")
    }

    /// Every action of every type of each shipped set, for a spread of subjects: prepared, indexed and unindexed agree.
    @Test(arguments: ["research-crawler", "mimisupply", "contacasal"])
    func preparedAndUnindexedAgreeOnShippedSets(set: String) throws {
        let policy = try #require(PolicyCompiler.load(directory: Self.root.appendingPathComponent("policies/\(set)").path).policy)
        let subjects = [
            Subject(),
            Subject(id: "u1", auth: Authentication(method: AuthMethod.anonymous)),
            Subject(id: "u1", tier: "pro", roles: ["customer", "admin"], auth: Authentication(method: AuthMethod.pin, verifiedAt: Self.now - 60)),
            Subject(id: "u2", tier: "free", subscriptionExpiry: Self.now - 1, auth: Authentication(method: AuthMethod.apple)),
            Subject(id: "owner", tier: "team", auth: Authentication(method: AuthMethod.biometric, verifiedAt: Self.now - 3600)),
        ]
        var checked = 0
        for type in policy.resourceTypeNames + ["nope"] {
            for action in policy.actionNames(of: type) + ["nope"] {
                let prepared = policy.prepare(resourceType: type, action: action)
                #expect((prepared == nil) == (action == "nope" || type == "nope"))
                for subject in subjects {
                    for usage in [0, 50, Int.max] {
                        let resource = Resource(
                            type: type, id: "r", ownerId: "owner", members: ["u1": "editor", "u2": "partner"],
                            usage: ["sources": usage], attributes: [:])
                        let request = Request(subject: subject, action: action, resource: resource, context: Context(now: Self.now))
                        let decision = policy.decide(request)
                        #expect(policy.decideUnindexed(request) == decision)
                        #expect(policy.explain(request).decision == decision)
                        if let prepared { #expect(policy.decide(request, prepared: prepared) == decision) }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 100)
    }

    @Test func aPreparedHandleForAnotherActionIsIgnored() throws {
        let policy = try Self.compile("""
            resources:
              doc:
                actions:
                  read: {}
                  write: {signIn: true}
            """)
        let read = try #require(policy.prepare(resourceType: "doc", action: "read"))
        let write = Request(action: "write", resource: Resource(type: "doc"))
        #expect(policy.decide(write, prepared: read) == policy.decide(write))
        #expect(policy.decide(write, prepared: read).reason == .unauthenticated)
        let unknown = Request(action: "read", resource: Resource(type: "folder"))
        #expect(policy.decide(unknown, prepared: read).reason == .defaultDeny)
    }

    /// Names compare by canonical equivalence, as Dictionary keys do, whichever path the lookup takes.
    @Test func nonASCIINamesMatchByCanonicalEquivalence() throws {
        let policy = try Self.compile("""
            resources:
              caf\u{E9}:
                actions:
                  r\u{E9}sum\u{E9}: {}
              kelvin:
                actions:
                  K: {}
            """)
        let composed = Request(action: "r\u{E9}sum\u{E9}", resource: Resource(type: "caf\u{E9}"))
        let decomposed = Request(action: "re\u{301}sume\u{301}", resource: Resource(type: "cafe\u{301}"))
        #expect(policy.decide(composed).isAllowed)
        #expect(policy.decide(decomposed).isAllowed)
        // U+212A KELVIN SIGN is canonically equivalent to the ASCII letter K.
        #expect(policy.decide(Request(action: "\u{212A}", resource: Resource(type: "kelvin"))).isAllowed)
        #expect(policy.decide(Request(action: "k", resource: Resource(type: "kelvin"))).reason == .defaultDeny)
    }

    /// Many types and actions: every pair resolves, and near misses do not.
    @Test func everyPairOfALargeSetResolves() throws {
        var yaml = "resources:\n"
        for t in 0..<300 {
            yaml += "  type_\(t):\n    actions:\n"
            for a in 0..<5 { yaml += "      act_\(a): {signIn: \(a % 2 == 0)}\n" }
        }
        let policy = try Self.compile(yaml)
        for t in 0..<300 {
            for a in 0..<5 {
                let request = Request(action: "act_\(a)", resource: Resource(type: "type_\(t)"))
                #expect(policy.decide(request).reason == (a % 2 == 0 ? .unauthenticated : .allowed))
            }
            #expect(policy.decide(Request(action: "act_5", resource: Resource(type: "type_\(t)"))).reason == .defaultDeny)
            #expect(policy.decide(Request(action: "act_0", resource: Resource(type: "type_\(t)x"))).reason == .defaultDeny)
        }
    }
}
