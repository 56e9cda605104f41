import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing
import GatehouseTestSupport

/// The engine against a plain reference model of the shipped research-crawler and mimisupply rules,
/// written straight from the product's semantics with no index and no compiled plans.
@Suite(.computeBound) struct ReferenceModelTests {
    static let root = Repository.root

    static func load(_ name: String) -> CompiledPolicy {
        let result = PolicyCompiler.load(directory: root.appendingPathComponent("policies/\(name)").path)
        precondition(result.policy != nil, "\(name): \(result.diagnostics.map(\.message))")
        return result.policy!
    }

    struct Expected: Equatable, CustomStringConvertible {
        var effect: Effect
        var reason: Reason
        var upgradeTo: String? = nil
        var limit: Int? = nil
        var used: Int? = nil
        var remaining: Int? = nil
        var description: String { "\(effect.rawValue)/\(reason.rawValue) up=\(upgradeTo ?? "-") limit=\(limit.map(String.init) ?? "-")/\(used.map(String.init) ?? "-")/\(remaining.map(String.init) ?? "-")" }
    }

    // MARK: The reference model

    static func signedIn(_ s: Subject) -> Bool {
        guard let id = s.id, !id.isEmpty else { return false }
        return s.auth?.method != "anonymous"
    }

    static func tier(_ s: Subject, now: Date) -> String {
        let tiers = ["free", "pro", "academic", "team"]
        guard signedIn(s), let t = s.tier, tiers.contains(t) else { return "free" }
        if let e = s.subscriptionExpiry, e < now { return "free" }
        return t
    }

    static func researchCrawler(_ r: Request) -> Expected {
        let now = r.context.now ?? Date()
        let deny = { (reason: Reason) in Expected(effect: .deny, reason: reason) }
        switch r.resource.type {
        case "app":
            let t = tier(r.subject, now: now)
            let paid = ["pro", "academic", "team"]
            switch r.action {
            case "ai_suggestions", "cloud_sync", "advanced_export":
                return paid.contains(t) ? Expected(effect: .allow, reason: .allowed) : Expected(effect: .deny, reason: .requiresUpgrade, upgradeTo: "pro")
            case "collaboration":
                return t == "team" ? Expected(effect: .allow, reason: .allowed) : Expected(effect: .deny, reason: .requiresUpgrade, upgradeTo: "team")
            case "add_source":
                let used = r.resource.usage["sources"] ?? 0
                if t != "free" { return Expected(effect: .allow, reason: .allowed) }
                if used >= 50 { return Expected(effect: .deny, reason: .limitExceeded, upgradeTo: "pro", limit: 50, used: used, remaining: 0) }
                return Expected(effect: .allow, reason: .allowed, limit: 50, used: used, remaining: 50 - used)
            case "send_analytics":
                return r.subject.attributes["analytics"] == .bool(true) ? Expected(effect: .allow, reason: .allowed) : deny(.consentRequired)
            case "send_crash_report":
                return r.subject.attributes["crashReporting"] == .bool(true) ? Expected(effect: .allow, reason: .allowed) : deny(.consentRequired)
            case "send_source_metadata":
                let ai = r.subject.attributes["aiSuggestions"] == .bool(true)
                let sharing = r.subject.attributes["dataSharing"]
                let ok = ai && (sharing == .string("minimal") || sharing == .string("standard"))
                return ok ? Expected(effect: .allow, reason: .allowed) : deny(.consentRequired)
            case "send_user_notes":
                return deny(.consentRequired)
            default: return deny(.defaultDeny)
            }
        case "project":
            let actions = ["view", "comment", "edit", "delete", "invite"]
            guard actions.contains(r.action) else { return deny(.defaultDeny) }
            guard signedIn(r.subject), let id = r.subject.id else { return deny(.unauthenticated) }
            if r.resource.ownerId == id { return Expected(effect: .allow, reason: .allowed) }
            guard let role = r.resource.members[id] else { return deny(.notMember) }
            if role == "owner" { return Expected(effect: .allow, reason: .allowed) }
            let allowed: Bool
            switch r.action {
            case "view": allowed = true
            case "comment": allowed = role == "commenter" || role == "editor"
            case "edit": allowed = role == "editor"
            default: allowed = false
            }
            if allowed { return Expected(effect: .allow, reason: .allowed) }
            return deny(r.action == "delete" || r.action == "invite" ? .ownerOnly : .accessDenied)
        default:
            return deny(.defaultDeny)
        }
    }

    static func mimiSupply(_ r: Request) -> Expected {
        guard r.resource.type == "marketplace" else { return Expected(effect: .deny, reason: .defaultDeny) }
        let needs: [String: [String]] = [
            "checkout": ["customer"], "driver_mode": ["driver"], "partner_management": ["partner", "admin"], "admin_console": ["admin"],
        ]
        if r.action == "browse" { return Expected(effect: .allow, reason: .allowed) }
        guard let roles = needs[r.action] else { return Expected(effect: .deny, reason: .defaultDeny) }
        guard signedIn(r.subject) else { return Expected(effect: .deny, reason: .unauthenticated) }
        return r.subject.roles.contains(where: roles.contains)
            ? Expected(effect: .allow, reason: .allowed) : Expected(effect: .deny, reason: .roleRequired)
    }

    // MARK: Generated requests


    static func randomRequest(_ g: inout SeededRandom, actions: [String], types: [String]) -> Request {
        let now = Date(timeIntervalSince1970: 1_795_348_800)
        let ids: [String?] = [nil, "", "alice", "bob", "carol"]
        let tiers: [String?] = [nil, "free", "pro", "academic", "team", "Pro", "premium"]
        let expiries: [Date?] = [nil, now.addingTimeInterval(-1), now, now.addingTimeInterval(86400)]
        let methods: [String?] = [nil, "anonymous", "pin", "apple", "biometric", "Anonymous"]
        let roleNames = ["customer", "driver", "partner", "admin", "Admin"]
        let memberRoles = ["owner", "editor", "commenter", "viewer", "guest"]
        var subject = Subject(id: ids.randomElement(using: &g)!, tier: tiers.randomElement(using: &g)!,
                              subscriptionExpiry: expiries.randomElement(using: &g)!)
        subject.roles = roleNames.filter { _ in Int.random(in: 0..<4, using: &g) == 0 }
        if let m = methods.randomElement(using: &g)! { subject.auth = Authentication(method: m) }
        for key in ["analytics", "crashReporting", "aiSuggestions"] where Bool.random(using: &g) {
            subject.attributes[key] = .bool(Bool.random(using: &g))
        }
        if Bool.random(using: &g) { subject.attributes["dataSharing"] = .string(["none", "minimal", "standard"].randomElement(using: &g)!) }
        var resource = Resource(type: types.randomElement(using: &g)!)
        resource.ownerId = ["alice", "bob", nil].randomElement(using: &g)!
        for id in ["alice", "bob", "carol"] where Int.random(in: 0..<3, using: &g) == 0 {
            resource.members[id] = memberRoles.randomElement(using: &g)!
        }
        if Bool.random(using: &g) { resource.usage["sources"] = [0, 1, 49, 50, 51, 1000].randomElement(using: &g)! }
        return Request(subject: subject, action: actions.randomElement(using: &g)!, resource: resource, context: Context(now: now))
    }

    static func observed(_ d: Decision) -> Expected {
        Expected(effect: d.effect, reason: d.reason, upgradeTo: d.upgradeTo, limit: d.limit, used: d.used, remaining: d.remaining)
    }

    @Test func researchCrawlerAgreesWithTheReferenceModel() {
        let policy = Self.load("research-crawler")
        var g = SeededRandom(state: 20261122)
        let actions = ["ai_suggestions", "cloud_sync", "advanced_export", "collaboration", "add_source", "send_analytics",
                       "send_crash_report", "send_source_metadata", "send_user_notes", "view", "comment", "edit", "delete",
                       "invite", "archive", "View", "browse"]
        var mismatches = 0
        for _ in 0..<20_000 {
            let request = Self.randomRequest(&g, actions: actions, types: ["app", "project", "folder", "App"])
            let expected = Self.researchCrawler(request)
            let decision = policy.decide(request)
            #expect(Self.observed(decision) == expected, "\(request.json.rendered())")
            #expect(Self.observed(policy.decideUnindexed(request)) == Self.observed(decision))
            if decision.effect == .deny { #expect(decision.message?.isEmpty == false) }
            if Self.observed(decision) != expected { mismatches += 1; if mismatches > 5 { break } }
        }
    }

    @Test func mimiSupplyAgreesWithTheReferenceModel() {
        let policy = Self.load("mimisupply")
        var g = SeededRandom(state: 7)
        let actions = ["browse", "checkout", "driver_mode", "partner_management", "admin_console", "refund", "Browse"]
        var mismatches = 0
        for _ in 0..<10_000 {
            let request = Self.randomRequest(&g, actions: actions, types: ["marketplace", "app"])
            let decision = policy.decide(request)
            #expect(Self.observed(decision) == Self.mimiSupply(request), "\(request.json.rendered())")
            if decision.effect == .deny { #expect(decision.message?.isEmpty == false) }
            if Self.observed(decision) != Self.mimiSupply(request) { mismatches += 1; if mismatches > 5 { break } }
        }
    }

    @Test func explainReachesTheSameDecisionAndPointsAtTheRule() {
        let policy = Self.load("research-crawler")
        let request = Request(subject: Subject(id: "u1", tier: "free"), action: "ai_suggestions", resource: Resource(type: "app"))
        let explanation = policy.explain(request)
        #expect(explanation.decision == policy.decide(request))
        #expect(explanation.trace.contains { $0.check == "requires_upgrade" && $0.outcome == .fail })
        #expect(explanation.decision.policy?.file.hasSuffix("research-crawler/tiers.yaml") == true)
    }
}
