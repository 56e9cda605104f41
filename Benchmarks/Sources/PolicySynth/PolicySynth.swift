import Foundation
import Gatehouse

/// Writes valid synthetic policy sets of N rules in the shapes real sets use, and requests that exercise them.
///
/// Shape of a set of `ruleCount` rules (all counts derived from N so a set grows the way a real one would):
/// - five tiers, `max(4, N/20)` features each granted to a tier subset, `max(1, N/100)` per-tier limits;
/// - five app roles and typed subject/resource attributes;
/// - `max(2, N/10)` resource types, each owned, with viewer/commenter/editor/owner roles and seven actions
///   (member actions, owner-only actions, a feature-gated export, a limited upload, an app-role admin action);
/// - N rules, each scoped to one resource type and one or two actions, alternating conditional denies and
///   conditional allows with `when` expressions over tiers, roles, resource roles and attributes, plus two
///   set-wide deny rules that apply to every type.
/// The files are split so each stays well under the loader's per-file size and node caps.
public struct SyntheticPolicySet: Sendable {
    public let ruleCount: Int
    public let typeCount: Int
    public let featureCount: Int
    public let limitCount: Int
    public let files: [PolicyFileInput]

    public static let tiers = ["free", "pro", "academic", "team", "enterprise"]
    public static let appRoles = ["customer", "driver", "partner", "admin", "support"]
    public static let actions = ["view", "comment", "edit", "delete", "invite", "export", "upload", "moderate"]
    public static let resourceRoles = ["viewer", "commenter", "editor", "owner"]

    public init(ruleCount: Int, directory: String = "synthetic") {
        self.ruleCount = ruleCount
        typeCount = max(2, ruleCount / 10)
        featureCount = max(4, ruleCount / 20)
        limitCount = max(1, ruleCount / 100)
        var files: [PolicyFileInput] = []
        func add(_ name: String, _ text: String) {
            files.append(PolicyFileInput(path: "\(directory)/\(name)", bytes: Array(text.utf8)))
        }
        add("tiers.yaml", Self.tiersFile(features: featureCount, limits: limitCount))
        add("app.yaml", Self.appFile())
        let typesPerFile = 400
        for start in stride(from: 0, to: typeCount, by: typesPerFile) {
            let range = start..<min(typeCount, start + typesPerFile)
            add(String(format: "resources-%05d.yaml", start / typesPerFile), Self.resourcesFile(range, features: featureCount, limits: limitCount))
        }
        let rulesPerFile = 1000
        for start in stride(from: 0, to: ruleCount, by: rulesPerFile) {
            let range = start..<min(ruleCount, start + rulesPerFile)
            add(String(format: "rules-%05d.yaml", start / rulesPerFile), Self.rulesFile(range, types: typeCount, global: start == 0))
        }
        self.files = files
    }

    /// Writes the set's files under `directory` (created if needed).
    public func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for file in files {
            let name = (file.path as NSString).lastPathComponent
            try Data(file.bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
        }
    }

    public var byteCount: Int { files.reduce(0) { $0 + $1.bytes.count } }

    // MARK: Files

    static func tiersFile(features: Int, limits: Int) -> String {
        var s = "tiers:\n"
        for (i, tier) in tiers.enumerated() {
            s += "  \(tier):\n    name: \(tier.capitalized)\n"
            s += i == 0 ? "    price: Free\n    default: true\n" : "    price: $\(i * 10 - 1).99/month\n    products: [com.example.\(tier).monthly]\n"
        }
        s += "\nfeatures:\n"
        for f in 0..<features {
            // Feature f is granted from tier 1 + f % 4 upwards, so every tier but the top lacks some.
            let from = 1 + f % 4
            s += "  feature_\(f):\n    name: Feature \(f)\n    tiers: [\(tiers[from...].joined(separator: ", "))]\n"
        }
        s += "\nlimits:\n"
        for l in 0..<limits {
            s += "  quota_\(l):\n    name: items\n    counter: items_\(l)\n    tiers:\n      free: \(10 + l % 50)\n      pro: \(1000 + l)\n    upgradeTo: pro\n"
        }
        s += """

            messages:
              requires_upgrade: "{feature} requires {tier}. Upgrade to unlock."
              limit_exceeded: "You've reached the limit of {limit} {limitName}. Upgrade to {tier} for more."
              access_denied: "You don't have permission for this action."
              not_member: "You're not a member of this resource."
              owner_only: "Only the owner can perform this action."
              unauthenticated: "Sign in to continue."
              role_required: "This area is for {roles} accounts."

            """
        return s
    }

    static func appFile() -> String {
        var s = "appRoles:\n"
        for role in appRoles { s += "  \(role): {name: \(role.capitalized)}\n" }
        s += """
            attributes:
              subject:
                region: {enum: [eu, us, apac]}
                beta: bool
                dataSharing: {enum: [none, minimal, standard]}
              resource:
                archived: bool
                visibility: {enum: [private, shared, public]}
                legalHold: bool

            """
        return s
    }

    static func resourcesFile(_ types: Range<Int>, features: Int, limits: Int) -> String {
        var s = "resources:\n"
        for t in types {
            s += """
                  doc_\(t):
                    owner: ownerId
                    ownerRole: owner
                    memberActions: [view]
                    roles:
                      viewer: {}
                      commenter: {grants: [comment]}
                      editor: {inherits: [commenter], grants: [edit, export, upload]}
                      owner: {}
                    actions:
                      view: {}
                      comment: {}
                      edit: {}
                      delete: {}
                      invite: {}
                      export: {feature: feature_\(t % features)}
                      upload: {limit: quota_\(t % limits)}
                      moderate: {appRoles: [admin, support]}

                """
        }
        return s
    }

    /// Rule `i` applies to `doc_(i % types)`; its shape cycles through six realistic patterns.
    static func rulesFile(_ rules: Range<Int>, types: Int, global: Bool) -> String {
        var s = "rules:\n"
        if global {
            s += """
                  - name: legal hold freezes every change
                    effect: deny
                    resources: "*"
                    actions: [edit, delete, upload]
                    when: has(resource.attributes.legalHold) && resource.attributes.legalHold
                    message: "This item is under legal hold."
                  - name: no sharing outside the region for eu free users
                    effect: deny
                    resources: "*"
                    actions: [invite]
                    when: subject.tier == "free" && has(subject.attributes.region) && subject.attributes.region == "eu" && has(resource.attributes.visibility) && resource.attributes.visibility == "public"

                """
        }
        for i in rules {
            let type = "doc_\(i % types)"
            switch (i / types) % 6 {
            case 0:
                s += """
                      - name: archived \(type) is read-only (\(i))
                        effect: deny
                        resources: [\(type)]
                        actions: [edit, upload]
                        when: has(resource.attributes.archived) && resource.attributes.archived
                        message: "This item is archived."

                    """
            case 1:
                s += """
                      - name: public \(type) is viewable by anyone signed in (\(i))
                        effect: allow
                        resources: [\(type)]
                        actions: [view]
                        when: subject.signedIn && has(resource.attributes.visibility) && resource.attributes.visibility == "public"

                    """
            case 2:
                s += """
                      - name: support may comment on \(type) (\(i))
                        effect: allow
                        resources: [\(type)]
                        actions: [comment, view]
                        when: '"support" in subject.roles && subject.tier in ["team", "enterprise"]'

                    """
            case 3:
                s += """
                      - name: beta editors may invite on \(type) (\(i))
                        effect: allow
                        resources: [\(type)]
                        actions: [invite]
                        when: resource.role == "editor" && has(subject.attributes.beta) && subject.attributes.beta

                    """
            case 4:
                s += """
                      - name: no export of \(type) without data sharing (\(i))
                        effect: deny
                        resources: [\(type)]
                        actions: [export]
                        when: has(subject.attributes.dataSharing) && subject.attributes.dataSharing == "none"
                        message: "Exports need data sharing turned on."

                    """
            default:
                s += """
                      - name: enterprise viewers may export \(type) (\(i))
                        effect: allow
                        resources: [\(type)]
                        actions: [export]
                        when: subject.tier == "enterprise" && (resource.role == "viewer" || "admin" in subject.roles)

                    """
            }
        }
        return s
    }

    // MARK: Requests

    /// A fixed, seeded mix of requests over the set: owners, members of each role, strangers, signed out,
    /// expired subscriptions, attribute-driven rule hits, and limits at the edge.
    public func requests(count: Int = 256, seed: UInt64 = 0x6a7e) -> [Request] {
        var rng = SplitMix64(seed: seed)
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        var result: [Request] = []
        result.reserveCapacity(count)
        for k in 0..<count {
            let t = Int(rng.next() % UInt64(typeCount))
            let action = Self.actions[Int(rng.next() % UInt64(Self.actions.count))]
            let userIndex = Int(rng.next() % 6)
            let user = "u\(userIndex)"
            var subject = Subject(id: user, tier: Self.tiers[Int(rng.next() % 5)], roles: [], auth: Authentication(method: AuthMethod.apple))
            switch k % 8 {
            case 0: subject = Subject()  // signed out
            case 1: subject.subscriptionExpiry = now.addingTimeInterval(-86_400)  // expired
            case 2: subject.roles = ["support"]; subject.tier = "team"
            case 3: subject.attributes = ["beta": .bool(true), "dataSharing": .string("none"), "region": .string("eu")]
            case 4: subject.roles = ["admin"]
            default: break
            }
            var resource = Resource(type: "doc_\(t)", id: "r\(k)", ownerId: "u0", members: ["u1": "viewer", "u2": "commenter", "u3": "editor", "u4": "owner"])
            let limitIndex = t % limitCount
            resource.usage = ["items_\(limitIndex)": 10 + limitIndex % 50 - 1 + Int(rng.next() % 2)]  // at the free cap's edge
            switch k % 5 {
            case 0: resource.attributes = ["archived": .bool(true)]
            case 1: resource.attributes = ["visibility": .string("public")]
            case 2: resource.attributes = ["legalHold": .bool(k % 3 == 0), "visibility": .string("shared")]
            default: break
            }
            result.append(Request(subject: subject, action: action, resource: resource, context: Context(now: now)))
        }
        return result
    }
}

/// A small deterministic generator so every run sees the same requests.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
