import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// A request described field by field (as `policy explain` flags give it), before it is checked against a set.
///
/// Every name is checked against what the set declares, with a did-you-mean, and attribute values are typed
/// by the set's `attributes:` declarations, so a typo is an error rather than a silent `default_deny`.
public struct RequestFlags: Sendable, Hashable {
    /// The subject's id; `user` when neither this nor `signedOut` is given.
    public var subjectID: String?
    public var signedOut = false
    public var tier: String?
    /// RFC 3339.
    public var subscriptionExpiry: String?
    /// The subscription lapsed a day before `now`.
    public var expired = false
    public var appRoles: [String] = []
    public var authMethod: String?
    /// A duration such as `5m` or `1h30m`: verified that long before `now`.
    public var verifiedAgo: String?
    /// RFC 3339.
    public var verifiedAt: String?
    /// `name=value` pairs.
    public var subjectAttributes: [String] = []
    public var action: String?
    /// Inferred from `action` when exactly one resource type has it.
    public var resourceType: String?
    public var resourceID: String?
    /// `self` (the subject) or a user id.
    public var owner: String?
    /// The subject's role on the resource, as a member.
    public var memberRole: String?
    /// `counter=N` pairs.
    public var usage: [String] = []
    public var resourceAttributes: [String] = []
    public var contextAttributes: [String] = []
    /// RFC 3339; the clock when absent. The built request always carries it, so it can be replayed.
    public var now: String?

    public init() {}

    /// True when no field is set, so the request must come from JSON instead.
    public var isEmpty: Bool { self == RequestFlags() }
}

/// A request the flags cannot describe: the flag at fault, what is wrong, and what would be right.
public struct RequestFlagError: Error, Sendable, Hashable, CustomStringConvertible {
    public var flag: String
    public var message: String
    public var help: [String]

    public init(_ flag: String, _ message: String, help: [String] = []) {
        self.flag = flag
        self.message = message
        self.help = help
    }

    public var description: String { ([flag + ": " + message] + help.map { "help: " + $0 }).joined(separator: "\n") }
}

extension RequestFlags {
    /// The first flag that describes one resource, which a plan (every resource of a type) cannot take: `policy plan`
    /// refuses it rather than ignore it, so no one reads a plan as the answer for the resource they named.
    public var resourceFlagForPlan: RequestFlagError? {
        let given: [(String, Bool)] = [
            ("--resource-id", resourceID != nil), ("--owner", owner != nil), ("--member-role", memberRole != nil),
            ("--usage", !usage.isEmpty), ("--resource-attribute", !resourceAttributes.isEmpty),
        ]
        guard let flag = given.first(where: { $0.1 })?.0 else { return nil }
        return RequestFlagError(
            flag, "a plan covers every resource of the type, so it takes no flag about one resource",
            help: ["drop \(flag); `policy explain` answers for one resource"])
    }

    /// The request these flags describe for a loaded set; `clock` stands in for a missing `now`.
    public func request(for result: PolicyLoadResult, clock: Date = Date()) throws(RequestFlagError) -> Request {
        guard let policy = result.policy else { throw RequestFlagError("--policies", "the policy set did not load") }
        let d = result.declarations

        let now = try now.map { text throws(RequestFlagError) in try Self.timestamp(text, flag: "--now") } ?? clock
        let context = Context(now: now, attributes: try Self.attributes(contextAttributes, flag: "--context-attribute", scope: .context, in: d))

        // Resource type and action.
        guard let action else { throw RequestFlagError("--action", "is required to build a request from flags (or give --request FILE)") }
        let typeName: String
        if let resourceType {
            guard policy.resourceTypes[resourceType] != nil else {
                throw RequestFlagError(
                    "--resource-type", "unknown resource type '\(resourceType)'",
                    help: Suggestion.help(for: resourceType, kind: "resource types", known: policy.resourceTypeNames))
            }
            guard policy.actionNames(of: resourceType).contains(action) else {
                throw RequestFlagError(
                    "--action", "'\(action)' is not an action of '\(resourceType)'",
                    help: Suggestion.help(for: action, kind: "actions of '\(resourceType)'", known: policy.actionNames(of: resourceType)))
            }
            typeName = resourceType
        } else {
            let owners = policy.resourceTypeNames.filter { policy.actionNames(of: $0).contains(action) }
            switch owners.count {
            case 1: typeName = owners[0]
            case 0:
                let all = policy.resourceTypeNames.flatMap { policy.actionNames(of: $0) }.uniquedSorted()
                throw RequestFlagError("--action", "unknown action '\(action)'", help: Suggestion.help(for: action, kind: "actions", known: all))
            default:
                throw RequestFlagError(
                    "--action", "'\(action)' is an action of \(owners.map { "'\($0)'" }.joined(separator: " and "))",
                    help: ["say which with --resource-type"])
            }
        }
        let typeDecl = d.resourceTypes.first { $0.id.value == typeName }

        // Subject.
        var subject = Subject()
        if signedOut, subjectID != nil { throw RequestFlagError("--signed-out", "cannot be combined with --subject-id") }
        subject.id = signedOut ? nil : (subjectID ?? "user")
        if let tier {
            guard policy.tierIDs.contains(tier) else {
                throw RequestFlagError(
                    "--subject-tier", "unknown tier '\(tier)'",
                    help: Suggestion.help(for: tier, kind: "tiers", known: policy.tierIDs)
                        + ["an unknown tier is the default tier '\(policy.defaultTierID)'; to explain that, give the request as JSON"])
            }
            subject.tier = tier
        }
        if expired, subscriptionExpiry != nil { throw RequestFlagError("--expired", "cannot be combined with --subscription-expiry") }
        if let subscriptionExpiry { subject.subscriptionExpiry = try Self.timestamp(subscriptionExpiry, flag: "--subscription-expiry") }
        if expired { subject.subscriptionExpiry = now.addingTimeInterval(-86_400) }
        let declaredRoles = d.appRoles.map(\.id.value)
        for role in appRoles where !declaredRoles.contains(role) {
            throw RequestFlagError("--app-role", "unknown app role '\(role)'", help: Suggestion.help(for: role, kind: "app roles", known: declaredRoles))
        }
        subject.roles = appRoles
        if verifiedAgo != nil, verifiedAt != nil { throw RequestFlagError("--verified-ago", "cannot be combined with --verified-at") }
        if let method = authMethod {
            guard AuthMethod.all.contains(method) else {
                throw RequestFlagError("--auth-method", "unknown auth method '\(method)'", help: Suggestion.help(for: method, kind: "auth methods", known: AuthMethod.all))
            }
            var auth = Authentication(method: method)
            if let verifiedAgo {
                guard let seconds = DurationText.seconds(verifiedAgo), seconds >= 0 else {
                    throw RequestFlagError("--verified-ago", "expected a duration such as 5m, 90s or 1h30m, found '\(verifiedAgo)'")
                }
                auth.verifiedAt = now.addingTimeInterval(-seconds)
            }
            if let verifiedAt { auth.verifiedAt = try Self.timestamp(verifiedAt, flag: "--verified-at") }
            subject.auth = auth
        } else if verifiedAgo != nil || verifiedAt != nil {
            throw RequestFlagError(verifiedAgo != nil ? "--verified-ago" : "--verified-at", "needs --auth-method (how the subject was verified)")
        }
        subject.attributes = try Self.attributes(subjectAttributes, flag: "--subject-attribute", scope: .subject, in: d)

        // Resource.
        var resource = Resource(type: typeName, id: resourceID)
        resource.attributes = try Self.attributes(resourceAttributes, flag: "--resource-attribute", scope: .resource, in: d)
        if let owner {
            let ownerID: String
            if owner == "self" {
                guard let id = subject.id else { throw RequestFlagError("--owner", "'self' needs a signed-in subject") }
                ownerID = id
            } else {
                ownerID = owner
            }
            guard let field = typeDecl?.owner?.value else {
                throw RequestFlagError("--owner", "resource type '\(typeName)' declares no owner", help: ["add `owner: ownerId` to '\(typeName)', or drop --owner"])
            }
            if field.hasPrefix("attributes.") {
                resource.attributes[String(field.dropFirst("attributes.".count))] = .string(ownerID)
            } else {
                resource.ownerId = ownerID
            }
        }
        if let memberRole {
            guard let id = subject.id else { throw RequestFlagError("--member-role", "a signed-out subject cannot be a member") }
            let roles = typeDecl?.roles.map(\.id.value) ?? []
            guard roles.contains(memberRole) else {
                throw RequestFlagError(
                    "--member-role", "unknown role '\(memberRole)' of '\(typeName)'",
                    help: Suggestion.help(for: memberRole, kind: "roles of '\(typeName)'", known: roles))
            }
            resource.members[id] = memberRole
        }
        let counters = Self.counters(of: policy, declarations: d)
        for pair in usage {
            let (name, value) = try Self.split(pair, flag: "--usage", shape: "counter=N")
            guard counters.contains(name) else {
                throw RequestFlagError("--usage", "no limit or condition reads counter '\(name)'", help: Suggestion.help(for: name, kind: "counters", known: counters))
            }
            guard let count = Int(value) else { throw RequestFlagError("--usage", "expected a whole number for '\(name)', found '\(value)'") }
            resource.usage[name] = count
        }
        return Request(subject: subject, action: action, resource: resource, context: context)
    }

    private static func timestamp(_ text: String, flag: String) throws(RequestFlagError) -> Date {
        guard let date = Timestamp.parse(text) else {
            throw RequestFlagError(flag, "expected an RFC 3339 timestamp such as 2026-11-22T12:00:00Z, found '\(text)'")
        }
        return date
    }

    private static func split(_ pair: String, flag: String, shape: String) throws(RequestFlagError) -> (String, String) {
        guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
            throw RequestFlagError(flag, "expected \(shape), found '\(pair)'")
        }
        return (String(pair[..<equals]), String(pair[pair.index(after: equals)...]))
    }

    /// Counters a limit reads, and counters rule and consent conditions read as `resource.usage.NAME`.
    private static func counters(of policy: CompiledPolicy, declarations: PolicyDeclarations) -> [String] {
        var names = declarations.limits.map(\.counter)
        for case .usage(let name) in ConditionFacts(conditionsOf: policy).reads { names.append(name) }
        return names.uniquedSorted()
    }

    /// `name=value` pairs typed by the set's declarations for one scope.
    private static func attributes(
        _ pairs: [String], flag: String, scope: DeclaredAttributeScope, in declarations: PolicyDeclarations
    ) throws(RequestFlagError) -> [String: Value] {
        var result: [String: Value] = [:]
        let declared = declarations.attributes.filter { $0.scope == scope }
        for pair in pairs {
            let (name, text) = try split(pair, flag: flag, shape: "name=value")
            guard let decl = declared.first(where: { $0.name.value == name }) else {
                throw RequestFlagError(
                    flag, "'\(name)' is not a declared \(scope.rawValue) attribute",
                    help: Suggestion.help(for: name, kind: "\(scope.rawValue) attributes", known: declared.map(\.name.value).sorted()))
            }
            result[name] = try value(text, as: decl.type, flag: flag, name: name)
        }
        return result
    }

    private static func value(_ text: String, as type: AttributeType, flag: String, name: String) throws(RequestFlagError) -> Value {
        func wrong(_ expected: String) -> RequestFlagError {
            RequestFlagError(flag, "'\(name)' is \(type): expected \(expected), found '\(text)'")
        }
        switch type {
        case .bool:
            switch text {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: throw wrong("true or false")
            }
        case .int:
            guard let i = Int(text) else { throw wrong("a whole number") }
            return .int(i)
        case .double:
            guard let x = Double(text), x.isFinite else { throw wrong("a number") }
            return .double(x)
        case .string:
            return .string(text)
        case .enumeration(let values):
            guard values.contains(text) else {
                throw RequestFlagError(
                    flag, "'\(name)' is one of \(values.joined(separator: ", ")); found '\(text)'",
                    help: Suggestion.closest(to: text, in: values).map { ["did you mean '\($0)'?"] } ?? [])
            }
            return .string(text)
        case .timestamp:
            guard Timestamp.parse(text) != nil else { throw wrong("an RFC 3339 timestamp such as 2026-11-22T12:00:00Z") }
            return .string(text)
        case .duration:
            guard DurationText.seconds(text) != nil else { throw wrong("a duration such as 5m or 1h30m") }
            return .string(text)
        case .list(let element):
            if text.isEmpty { return .list([]) }
            var items: [Value] = []
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                items.append(try value(String(item), as: element, flag: flag, name: name))
            }
            return .list(items)
        }
    }
}

extension Array where Element == String {
    fileprivate func uniquedSorted() -> [String] { Array(Set(self)).sorted() }
}
