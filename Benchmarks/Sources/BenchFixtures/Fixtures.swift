import Foundation
import Gatehouse
import PolicySynth

/// The shipped policy sets and a fixed, realistic request mix for each, shared by every benchmark runner.
public enum Fixtures {
    /// The repository's `policies/` folder, found from this file's location so any working directory works.
    public static let policiesDirectory: String = {
        if let override = ProcessInfo.processInfo.environment["GATEHOUSE_POLICIES"] { return override }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // BenchFixtures, Sources, Benchmarks, repo root
        return url.appendingPathComponent("policies").path
    }()

    /// The shipped sets present in this checkout, by folder name (contacasal is included once it ships).
    public static var shippedSetNames: [String] {
        ["research-crawler", "mimisupply", "contacasal"].filter {
            FileManager.default.fileExists(atPath: policiesDirectory + "/" + $0)
        }
    }

    /// The set's files read into memory, so compile benchmarks measure the compiler and not the disk.
    public static func files(of set: String) -> [PolicyFileInput] {
        let directory = policiesDirectory + "/" + set
        return PolicyCompiler.policyFiles(in: directory).map { path in
            PolicyFileInput(path: path, bytes: Array(FileManager.default.contents(atPath: path) ?? Data()))
        }
    }

    /// Compiles a shipped set, stopping the run if it does not load.
    public static func compiled(_ set: String) -> CompiledPolicy {
        let result = PolicyCompiler.load(directory: policiesDirectory + "/" + set)
        guard let policy = result.policy else {
            fatalError("policy set \(set) does not load: \(result.diagnostics.map(\.message))")
        }
        return policy
    }

    /// Compiles a synthetic set, stopping the run if it does not load.
    public static func compiled(_ set: PolicySynthSet) -> CompiledPolicy {
        let result = PolicyCompiler.compile(name: "synthetic-\(set.ruleCount)", files: set.files)
        guard let policy = result.policy else {
            fatalError("synthetic set of \(set.ruleCount) rules does not load: \(result.diagnostics.prefix(5).map { "\($0.location?.description ?? ""): \($0.message)" })")
        }
        return policy
    }

    static let now = Date(timeIntervalSince1970: 1_780_000_000)  // 2026-05-28
    static let expired = now.addingTimeInterval(-86_400)
    static let renewsLater = now.addingTimeInterval(30 * 86_400)

    /// The request mix for a shipped set: allows and denies, signed out, expired subscriptions,
    /// members and strangers, limits at the edge. Every request carries `context.now` so decisions are pure.
    public static func requests(for set: String) -> [Request] {
        switch set {
        case "research-crawler": return researchCrawler
        case "mimisupply": return mimisupply
        case "contacasal": return contacasal
        default: return []
        }
    }

    static let apple = Authentication(method: AuthMethod.apple)
    static let anonymous = Authentication(method: AuthMethod.anonymous)

    public static let researchCrawler: [Request] = {
        let ctx = Context(now: now)
        let app = Resource(type: "app")
        func user(_ tier: String?, expiry: Date? = nil, attributes: [String: Value] = [:]) -> Subject {
            Subject(id: "u1", tier: tier, subscriptionExpiry: expiry, auth: apple, attributes: attributes)
        }
        let project = { (members: [String: String]) in Resource(type: "project", id: "p1", ownerId: "alice", members: members) }
        let team = ["bob": "editor", "carol": "viewer", "dan": "commenter", "erin": "owner"]
        return [
            // Feature gates per tier, including an expired subscription and a signed-out visitor.
            Request(subject: user("pro", expiry: renewsLater), action: "ai_suggestions", resource: app, context: ctx),  // allow
            Request(subject: user("free"), action: "ai_suggestions", resource: app, context: ctx),  // deny upgrade
            Request(subject: user("pro", expiry: expired), action: "cloud_sync", resource: app, context: ctx),  // deny: expired
            Request(subject: Subject(), action: "cloud_sync", resource: app, context: ctx),  // signed out -> free
            Request(subject: user("academic"), action: "advanced_export", resource: app, context: ctx),  // allow
            Request(subject: user("pro"), action: "collaboration", resource: app, context: ctx),  // deny, needs team
            Request(subject: user("team"), action: "collaboration", resource: app, context: ctx),  // allow
            // The sources limit at its edge.
            Request(subject: user("free"), action: "add_source", resource: Resource(type: "app", usage: ["sources": 49]), context: ctx),  // allow, last
            Request(subject: user("free"), action: "add_source", resource: Resource(type: "app", usage: ["sources": 50]), context: ctx),  // deny limit
            Request(subject: user("pro"), action: "add_source", resource: Resource(type: "app", usage: ["sources": 5000]), context: ctx),  // unlimited
            // Consent conditions.
            Request(subject: user("free", attributes: ["analytics": .bool(true)]), action: "send_analytics", resource: app, context: ctx),
            Request(subject: user("free"), action: "send_analytics", resource: app, context: ctx),
            Request(subject: user("pro", attributes: ["aiSuggestions": .bool(true), "dataSharing": .string("minimal")]),
                    action: "send_source_metadata", resource: app, context: ctx),
            Request(subject: user("team", attributes: ["analytics": .bool(true)]), action: "send_user_notes", resource: app, context: ctx),
            // Shared projects: owner, member roles, strangers, signed out, unknown action and type.
            Request(subject: Subject(id: "alice", auth: apple), action: "delete", resource: project(team), context: ctx),  // owner
            Request(subject: Subject(id: "bob", auth: apple), action: "edit", resource: project(team), context: ctx),  // editor allow
            Request(subject: Subject(id: "bob", auth: apple), action: "comment", resource: project(team), context: ctx),  // inherited
            Request(subject: Subject(id: "carol", auth: apple), action: "view", resource: project(team), context: ctx),  // member view
            Request(subject: Subject(id: "carol", auth: apple), action: "comment", resource: project(team), context: ctx),  // deny
            Request(subject: Subject(id: "bob", auth: apple), action: "invite", resource: project(team), context: ctx),  // owner only
            Request(subject: Subject(id: "erin", auth: apple), action: "invite", resource: project(team), context: ctx),  // owner role
            Request(subject: Subject(id: "mallory", auth: apple), action: "view", resource: project(team), context: ctx),  // not member
            Request(subject: Subject(), action: "view", resource: project(team), context: ctx),  // signed out
            Request(subject: Subject(id: "alice", auth: anonymous), action: "view", resource: project(team), context: ctx),  // anonymous
            Request(subject: Subject(id: "alice", auth: apple), action: "archive", resource: project(team), context: ctx),  // unknown action
            Request(subject: Subject(id: "alice", auth: apple), action: "view", resource: Resource(type: "folder"), context: ctx),  // unknown type
        ]
    }()

    public static let mimisupply: [Request] = {
        let ctx = Context(now: now)
        let market = Resource(type: "marketplace")
        func user(_ roles: [String], auth: Authentication? = apple) -> Subject { Subject(id: "u1", roles: roles, auth: auth) }
        return [
            Request(subject: Subject(), action: "browse", resource: market, context: ctx),  // allow signed out
            Request(subject: Subject(id: "a1", auth: anonymous), action: "browse", resource: market, context: ctx),
            Request(subject: Subject(), action: "checkout", resource: market, context: ctx),  // deny: sign in
            Request(subject: user(["customer"], auth: anonymous), action: "checkout", resource: market, context: ctx),
            Request(subject: user(["customer"]), action: "checkout", resource: market, context: ctx),  // allow
            Request(subject: user(["driver"]), action: "checkout", resource: market, context: ctx),  // role required
            Request(subject: user(["customer"]), action: "driver_mode", resource: market, context: ctx),
            Request(subject: user(["driver"]), action: "driver_mode", resource: market, context: ctx),
            Request(subject: user(["partner"]), action: "partner_management", resource: market, context: ctx),
            Request(subject: user(["admin"]), action: "partner_management", resource: market, context: ctx),
            Request(subject: user(["customer", "driver"]), action: "partner_management", resource: market, context: ctx),
            Request(subject: user(["partner"]), action: "admin_console", resource: market, context: ctx),
            Request(subject: user(["admin"]), action: "admin_console", resource: market, context: ctx),
            Request(subject: user(["Admin"]), action: "admin_console", resource: market, context: ctx),
            Request(subject: user(["admin"]), action: "refund", resource: market, context: ctx),  // unknown action
        ]
    }()

    public static let contacasal: [Request] = {
        let ctx = Context(now: now)
        let onboarding = Resource(type: "onboarding")
        let account = Resource(type: "account")
        let space = Resource(type: "space", id: "s1", ownerId: "ana", members: ["bia": "partner"])
        func who(_ id: String, _ method: String, minutesAgo: Double? = 1) -> Subject {
            Subject(id: id, auth: Authentication(method: method, verifiedAt: minutesAgo.map { now.addingTimeInterval(-$0 * 60) }))
        }
        return [
            // Onboarding: anonymous sessions may start.
            Request(subject: who("anon-1", AuthMethod.anonymous, minutesAgo: nil), action: "create_space", resource: onboarding, context: ctx),
            Request(subject: Subject(), action: "join_space", resource: onboarding, context: ctx),
            Request(subject: who("anon-1", AuthMethod.anonymous, minutesAgo: nil), action: "set_pin", resource: onboarding, context: ctx),
            // The shared space: PIN or Face ID in the last 15 minutes, owner and partner, strangers.
            Request(subject: who("ana", AuthMethod.anonymous, minutesAgo: nil), action: "view_dashboard", resource: space, context: ctx),  // signed out
            Request(subject: who("bia", AuthMethod.pin, minutesAgo: 10), action: "view_dashboard", resource: space, context: ctx),  // allow
            Request(subject: who("bia", AuthMethod.biometric), action: "add_expense", resource: space, context: ctx),  // allow
            Request(subject: who("bia", AuthMethod.pin, minutesAgo: 15), action: "edit_expense", resource: space, context: ctx),  // edge: allow
            Request(subject: who("bia", AuthMethod.pin, minutesAgo: 15.01), action: "delete_expense", resource: space, context: ctx),  // stale
            Request(subject: who("bia", AuthMethod.apple), action: "view_dashboard", resource: space, context: ctx),  // wrong method
            Request(subject: who("caio", AuthMethod.pin), action: "view_dashboard", resource: space, context: ctx),  // not member
            Request(subject: who("bia", AuthMethod.pin), action: "regenerate_share_code", resource: space, context: ctx),  // owner only
            Request(subject: who("ana", AuthMethod.pin), action: "regenerate_share_code", resource: space, context: ctx),  // owner
            Request(subject: who("ana", AuthMethod.biometric), action: "remove_partner", resource: space, context: ctx),  // needs PIN
            Request(subject: who("ana", AuthMethod.pin, minutesAgo: 2), action: "remove_partner", resource: space, context: ctx),  // allow
            // Account: Apple identity, fresh verification.
            Request(subject: who("ana", AuthMethod.apple, minutesAgo: nil), action: "sign_in_on_new_device", resource: account, context: ctx),
            Request(subject: who("ana", AuthMethod.pin, minutesAgo: nil), action: "sign_in_on_new_device", resource: account, context: ctx),
            Request(subject: who("ana", AuthMethod.pin, minutesAgo: 3), action: "export_data", resource: account, context: ctx),  // allow
            Request(subject: who("anon-1", AuthMethod.anonymous, minutesAgo: nil), action: "export_data", resource: account, context: ctx),
            Request(subject: who("ana", AuthMethod.pin, minutesAgo: 30), action: "delete_account", resource: account, context: ctx),  // stale
            Request(subject: who("ana", AuthMethod.pin), action: "close_space", resource: space, context: ctx),  // unknown action
        ]
    }()

    /// The allow-path requests only, for the zero-allocation target.
    public static func allowRequests(for set: String, policy: CompiledPolicy) -> [Request] {
        requests(for: set).filter { policy.decide($0).isAllowed }
    }
}

public typealias PolicySynthSet = SyntheticPolicySet
