import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing

/// The vocabulary's lookups: the UTF-8 forms find what the String forms find, and a request built field by field
/// from bytes (as a byte-level reader would) decides as the `Request` does. `PolicySetDifferentialTests` compares
/// `decide(vocabulary.intern(request))` with `decide(request)` on every generated request and set.
@Suite struct VocabularyTests {
    static func policy(_ set: String) throws -> CompiledPolicy {
        try #require(PolicyCompiler.compile(name: set, files: try PolicySetDifferentialTests.shippedFiles(set)).policy)
    }

    static func bytes<R>(_ text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        Array(text.utf8).withUnsafeBytes(body)
    }

    @Test func utf8LookupsFindWhatStringLookupsFind() throws {
        let policy = try Self.policy("research-crawler")
        let words = policy.vocabulary
        for name in ["free", "pro", "academic", "team", "premium", "", "Pro", "pro "] {
            #expect(Self.bytes(name) { words.tier(utf8: $0) } == words.tier(name), "\(name)")
        }
        #expect(words.tier("team") != nil && words.tier("premium") == nil)
        for name in ["viewer", "commenter", "editor", "owner", "admin", ""] {
            #expect(Self.bytes(name) { words.memberRole(utf8: $0) } == words.memberRole(name), "\(name)")
        }
        #expect(words.memberRole("editor") != nil && words.memberRole("admin") == nil)
        for (type, action) in [("project", "view"), ("app", "add_source"), ("project", "archive"), ("folder", "view"), ("", "")] {
            let fromBytes = Self.bytes(type) { t in Self.bytes(action) { a in words.action(type: t, action: a) } }
            #expect(fromBytes == words.action(type: type, action: action), "\(type).\(action)")
        }
        #expect(words.action(type: "project", action: "view") != nil && words.action(type: "project", action: "archive") == nil)
        #expect(words.authMethod(utf8: UnsafeRawBufferPointer(start: nil, count: 0)) == nil)
        #expect(Self.bytes("pin") { words.authMethod(utf8: $0) } == words.authMethod("pin") && words.authMethod("pin") != nil)
    }

    /// Names outside ASCII compare by canonical equivalence, as `decide(Request)` compares them: "te\u{301}am" is
    /// not "team", and a decomposed accent finds a precomposed name only through the String comparison.
    @Test func nonASCIIBytesFallBackToCanonicalEquivalence() throws {
        let policy = try Self.policy("mimisupply")
        let words = policy.vocabulary
        #expect(Self.bytes("cust\u{F6}mer") { words.appRole(utf8: $0) } == nil)
        #expect(Self.bytes("customer") { words.appRole(utf8: $0) } == words.appRole("customer"))
        // The Kelvin sign is canonically equivalent to "K": no shipped name has one, so it finds nothing either way.
        #expect(Self.bytes("\u{212A}") { words.appRole(utf8: $0) } == words.appRole("\u{212A}"))
    }

    /// Built by hand from bytes, without a `Request`, for an action that reads none: same decision as `decide`.
    @Test func aRequestBuiltFromBytesDecidesAsTheRequest() throws {
        let policy = try Self.policy("mimisupply")
        let words = policy.vocabulary
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        for (roles, action) in [(["customer"], "checkout"), (["driver"], "checkout"), (["partner", "x"], "partner_management"), ([], "browse")] {
            let request = Request(
                subject: Subject(id: "u1", roles: roles, auth: Authentication(method: AuthMethod.apple)), action: action,
                resource: Resource(type: "marketplace"), context: Context(now: now))
            let id = try #require(Self.bytes("marketplace") { t in Self.bytes(action) { a in words.action(type: t, action: a) } })
            #expect(!words.readsRequest(id))
            var interned = InternedRequest(action: id, signedIn: true, authMethod: words.authMethod("apple"), now: now)
            for role in roles { Self.bytes(role) { words.appRole(utf8: $0) }.map { interned.appRoles.insert($0) } }
            #expect(policy.decide(interned) == policy.decide(request), "\(roles) \(action)")
        }
        // An unknown pair is default_deny, as for the String-keyed request.
        #expect(policy.decide(InternedRequest(action: nil)).reason == .defaultDeny)
    }

    /// research-crawler's consent actions evaluate conditions, so interning keeps the request for them.
    @Test func conditionActionsKeepTheRequest() throws {
        let policy = try Self.policy("research-crawler")
        let words = policy.vocabulary
        let consent = try #require(words.action(type: "app", action: "send_analytics"))
        let feature = try #require(words.action(type: "app", action: "cloud_sync"))
        #expect(words.readsRequest(consent) && !words.readsRequest(feature))
        #expect(words.limitCounter(of: try #require(words.action(type: "app", action: "add_source"))) == "sources")
        #expect(words.limitCounter(of: feature) == nil)
        #expect(words.owner(of: try #require(words.action(type: "project", action: "edit"))) == .ownerId)
        #expect(words.owner(of: feature) == nil)
        let request = Request(
            subject: Subject(id: "u1", auth: Authentication(method: AuthMethod.apple), attributes: ["analytics": .bool(true)]),
            action: "send_analytics", resource: Resource(type: "app"), context: Context(now: Date(timeIntervalSince1970: 0)))
        let interned = words.intern(request)
        #expect(interned.request == request)
        #expect(policy.decide(interned) == policy.decide(request) && policy.decide(request).isAllowed)
    }
}
