import Foundation
import Gatehouse

/// What a hand-written check answers: allow or deny, the contract's reason, and the limit figures on an allow
/// under a cap. No message and no source location: the seed apps build their message only when they show it.
public struct HandDecision: Sendable, Equatable {
    public var isAllowed: Bool
    public var reason: Reason
    public var limit: Int?
    public var used: Int?
    public var remaining: Int?

    @inlinable
    public init(isAllowed: Bool, reason: Reason, limit: Int? = nil, used: Int? = nil, remaining: Int? = nil) {
        self.isAllowed = isAllowed
        self.reason = reason
        self.limit = limit
        self.used = used
        self.remaining = remaining
    }

    public static let allow = HandDecision(isAllowed: true, reason: .allowed)
    @inlinable
    public static func deny(_ reason: Reason) -> HandDecision { HandDecision(isAllowed: false, reason: reason) }
}

/// The shipped research-crawler and mimisupply rules written by hand, the way the seed apps hard-code them
/// (`SubscriptionTier` switches, `FeatureGate`, `SharedSpace.checkPermission`, `PrivacyManager.canSendData`,
/// MimiSupply's login gates), over the same String-keyed `Request`. The benchmark's yardstick for `decide`.
public enum HandWritten {
    /// research-crawler (seeds 000 and 003).
    @inline(never)
    public static func researchCrawler(_ request: Request) -> HandDecision {
        let subject = request.subject
        let signedIn = subject.isSignedIn
        switch request.resource.type {
        case "app":
            let now = request.context.now ?? Date()
            switch request.action {
            case "ai_suggestions", "cloud_sync", "advanced_export":
                return tier(subject, signedIn: signedIn, now: now) == .free ? .deny(.requiresUpgrade) : .allow
            case "collaboration":
                return tier(subject, signedIn: signedIn, now: now) == .team ? .allow : .deny(.requiresUpgrade)
            case "add_source":
                guard let maxSources = tier(subject, signedIn: signedIn, now: now).maxSources else { return .allow }
                let used = request.resource.usage["sources"] ?? 0
                if used >= maxSources { return .deny(.limitExceeded) }
                return HandDecision(isAllowed: true, reason: .allowed, limit: maxSources, used: used, remaining: maxSources - used)
            case "send_analytics":
                return subject.attributes["analytics"] == .bool(true) ? .allow : .deny(.consentRequired)
            case "send_crash_report":
                return subject.attributes["crashReporting"] == .bool(true) ? .allow : .deny(.consentRequired)
            case "send_source_metadata":
                guard subject.attributes["aiSuggestions"] == .bool(true),
                    case .string(let sharing)? = subject.attributes["dataSharing"], sharing == "minimal" || sharing == "standard"
                else { return .deny(.consentRequired) }
                return .allow
            case "send_user_notes":
                return .deny(.consentRequired)  // never sent
            default:
                return .deny(.defaultDeny)
            }
        case "project":
            let permission: ProjectPermission
            switch request.action {
            case "view": permission = .view
            case "comment": permission = .comment
            case "edit": permission = .edit
            case "delete": permission = .delete
            case "invite": permission = .invite
            default: return .deny(.defaultDeny)
            }
            guard signedIn, let user = subject.id else { return .deny(.unauthenticated) }
            // PermissionChecker.checkAccess: the owner has all permissions.
            if request.resource.ownerId == user { return .allow }
            guard let role = request.resource.members[user] else { return .deny(.notMember) }
            switch role {
            case "owner": return .allow
            case "editor": return permission == .delete || permission == .invite ? .deny(.ownerOnly) : .allow
            case "commenter":
                switch permission {
                case .view, .comment: return .allow
                case .edit: return .deny(.accessDenied)
                case .delete, .invite: return .deny(.ownerOnly)
                }
            default:  // viewer, or a role the app does not know: members can view
                switch permission {
                case .view: return .allow
                case .comment, .edit: return .deny(.accessDenied)
                case .delete, .invite: return .deny(.ownerOnly)
                }
            }
        default:
            return .deny(.defaultDeny)
        }
    }

    /// mimisupply (seed 002): browsing needs no sign-in; checkout, driver mode, partner management and the admin
    /// console need a signed-in user holding the role.
    @inline(never)
    public static func mimisupply(_ request: Request) -> HandDecision {
        guard request.resource.type == "marketplace" else { return .deny(.defaultDeny) }
        let needed: (String, String?)
        switch request.action {
        case "browse": return .allow
        case "checkout": needed = ("customer", nil)
        case "driver_mode": needed = ("driver", nil)
        case "partner_management": needed = ("partner", "admin")
        case "admin_console": needed = ("admin", nil)
        default: return .deny(.defaultDeny)
        }
        guard request.subject.isSignedIn else { return .deny(.unauthenticated) }
        for role in request.subject.roles where role == needed.0 || role == needed.1 { return .allow }
        return .deny(.roleRequired)
    }

    /// The hand-written check for a shipped set, nil for a set with none.
    public static func check(for set: String) -> (@Sendable (Request) -> HandDecision)? {
        switch set {
        case "research-crawler": return researchCrawler
        case "mimisupply": return mimisupply
        default: return nil
        }
    }

    enum ProjectPermission { case view, comment, edit, delete, invite }

    public enum SubscriptionTier: Sendable {
        case free, pro, academic, team

        var maxSources: Int? { self == .free ? 50 : nil }
    }

    /// The tier that applies: the subscription's while signed in and not expired, else free.
    @inline(__always)
    static func tier(_ subject: Subject, signedIn: Bool, now: Date) -> SubscriptionTier {
        guard signedIn, let name = subject.tier else { return .free }
        if let expiry = subject.subscriptionExpiry, expiry < now { return .free }
        switch name {
        case "pro": return .pro
        case "academic": return .academic
        case "team": return .team
        default: return .free
        }
    }
}

/// A request with every name already turned into an integer by the app (enums and flags, the way an app that
/// models its domain in Swift types holds it): the yardstick for the policy's interned decide.
public struct HandInternedRequest: Sendable {
    public enum Action: UInt8, Sendable {
        case aiSuggestions, cloudSync, advancedExport, collaboration, addSource
        case sendAnalytics, sendCrashReport, sendSourceMetadata, sendUserNotes
        case view, comment, edit, delete, invite
        case browse, checkout, driverMode, partnerManagement, adminConsole
        case unknown
    }

    public enum MemberRole: UInt8, Sendable { case none, viewer, commenter, editor, owner, other }

    public enum Role {
        public static let customer: UInt8 = 1, driver: UInt8 = 2, partner: UInt8 = 4, admin: UInt8 = 8
    }

    public var action: Action
    public var signedIn: Bool
    /// The subscription tier as held, before expiry.
    public var tier: HandWritten.SubscriptionTier
    public var subscriptionExpiry: Double?
    public var now: Double
    public var sources: Int
    public var isOwner: Bool
    public var memberRole: MemberRole
    /// App roles as bits of `Role`.
    public var roles: UInt8
    // PrivacySettings (seed 003): absent settings are false / none.
    public var analytics: Bool
    public var crashReporting: Bool
    public var aiSuggestions: Bool
    public var dataSharingAboveNone: Bool

    /// Interns a String-keyed request ahead of time (not part of what is measured).
    public init(_ request: Request) {
        let subject = request.subject
        let actions: [String: Action] = [
            "app.ai_suggestions": .aiSuggestions, "app.cloud_sync": .cloudSync, "app.advanced_export": .advancedExport,
            "app.collaboration": .collaboration, "app.add_source": .addSource, "app.send_analytics": .sendAnalytics,
            "app.send_crash_report": .sendCrashReport, "app.send_source_metadata": .sendSourceMetadata,
            "app.send_user_notes": .sendUserNotes, "project.view": .view, "project.comment": .comment, "project.edit": .edit,
            "project.delete": .delete, "project.invite": .invite, "marketplace.browse": .browse, "marketplace.checkout": .checkout,
            "marketplace.driver_mode": .driverMode, "marketplace.partner_management": .partnerManagement,
            "marketplace.admin_console": .adminConsole,
        ]
        action = actions[request.resource.type + "." + request.action] ?? .unknown
        signedIn = subject.isSignedIn
        tier = ["pro": .pro, "academic": .academic, "team": .team][subject.tier ?? ""] ?? .free
        subscriptionExpiry = subject.subscriptionExpiry?.timeIntervalSince1970
        now = (request.context.now ?? Date()).timeIntervalSince1970
        sources = request.resource.usage["sources"] ?? 0
        let id = subject.id ?? ""
        isOwner = signedIn && request.resource.ownerId == id
        memberRole = request.resource.members[id].map { ["viewer": .viewer, "commenter": .commenter, "editor": .editor, "owner": .owner][$0] ?? .other } ?? .none
        roles = subject.roles.reduce(0) { bits, role in
            bits | (["customer": Role.customer, "driver": Role.driver, "partner": Role.partner, "admin": Role.admin][role] ?? 0)
        }
        analytics = subject.attributes["analytics"] == .bool(true)
        crashReporting = subject.attributes["crashReporting"] == .bool(true)
        aiSuggestions = subject.attributes["aiSuggestions"] == .bool(true)
        dataSharingAboveNone = subject.attributes["dataSharing"] == .string("minimal") || subject.attributes["dataSharing"] == .string("standard")
    }
}

extension HandWritten {
    /// research-crawler and mimisupply by hand over pre-interned integers.
    @inline(never)
    public static func decide(_ r: HandInternedRequest) -> HandDecision {
        switch r.action {
        case .aiSuggestions, .cloudSync, .advancedExport:
            return tier(r) == .free ? .deny(.requiresUpgrade) : .allow
        case .collaboration:
            return tier(r) == .team ? .allow : .deny(.requiresUpgrade)
        case .addSource:
            guard let maxSources = tier(r).maxSources else { return .allow }
            if r.sources >= maxSources { return .deny(.limitExceeded) }
            return HandDecision(isAllowed: true, reason: .allowed, limit: maxSources, used: r.sources, remaining: maxSources - r.sources)
        case .sendAnalytics: return r.analytics ? .allow : .deny(.consentRequired)
        case .sendCrashReport: return r.crashReporting ? .allow : .deny(.consentRequired)
        case .sendSourceMetadata: return r.aiSuggestions && r.dataSharingAboveNone ? .allow : .deny(.consentRequired)
        case .sendUserNotes: return .deny(.consentRequired)
        case .view, .comment, .edit, .delete, .invite:
            guard r.signedIn else { return .deny(.unauthenticated) }
            if r.isOwner || r.memberRole == .owner { return .allow }
            switch (r.memberRole, r.action) {
            case (.none, _): return .deny(.notMember)
            case (_, .view), (.commenter, .comment), (.editor, .comment), (.editor, .edit): return .allow
            case (_, .delete), (_, .invite): return .deny(.ownerOnly)
            default: return .deny(.accessDenied)
            }
        case .browse: return .allow
        case .checkout: return role(r, HandInternedRequest.Role.customer)
        case .driverMode: return role(r, HandInternedRequest.Role.driver)
        case .partnerManagement: return role(r, HandInternedRequest.Role.partner | HandInternedRequest.Role.admin)
        case .adminConsole: return role(r, HandInternedRequest.Role.admin)
        case .unknown: return .deny(.defaultDeny)
        }
    }

    @inline(__always)
    static func tier(_ r: HandInternedRequest) -> SubscriptionTier {
        guard r.signedIn else { return .free }
        if let expiry = r.subscriptionExpiry, expiry < r.now { return .free }
        return r.tier
    }

    @inline(__always)
    static func role(_ r: HandInternedRequest, _ bits: UInt8) -> HandDecision {
        guard r.signedIn else { return .deny(.unauthenticated) }
        return r.roles & bits != 0 ? .allow : .deny(.roleRequired)
    }
}
