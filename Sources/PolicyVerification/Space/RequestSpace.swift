import Foundation
import PolicyEngine
import PolicyModel

/// Everything a selector or a report needs to know about the dimensions a set of policies spans, beyond
/// what the policies' own checks read: names the invariants mention make those dimensions count everywhere.
struct SpaceHints {
    var appRoles: Set<String> = []
    var authMethods: Set<String> = []
    var standingEverywhere = false
    var authEverywhere = false
}

/// Builds the request spaces of one or more compiled policies (two for `diff`: the union of what either reads).
enum RequestSpace {
    /// The instant requests are decided at unless a condition compares `context.now` with a literal.
    static let baseNow: Double = 1_767_225_600  // 2026-01-01T00:00:00Z
    static let otherUser = "u-other"
    /// The most app roles whose every combination is tried; beyond it, each alone, none and all.
    static let maxAppRolesForSubsets = 8

    static func age(_ seconds: Double) -> String {
        if seconds == 0 { return "verified now" }
        let text = CompiledPolicy.formatDuration(abs(seconds))
        return seconds < 0 ? "verified \(text) from now" : "verified \(text) ago"
    }

    /// Every (resource type, action) of the policies, sorted, with its space.
    static func build(_ policies: [CompiledPolicy], hints: SpaceHints = SpaceHints()) -> [ActionSpace] {
        var keys: [(String, String)] = []
        var seen = Set<String>()
        for policy in policies {
            for (typeName, type) in policy.resourceTypes {
                for actionName in type.actions.keys where seen.insert("\(typeName)\u{0}\(actionName)").inserted {
                    keys.append((typeName, actionName))
                }
            }
        }
        keys.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return keys.map { build(type: $0.0, action: $0.1, policies: policies, hints: hints) }
    }

    static func build(type typeName: String, action actionName: String, policies: [CompiledPolicy], hints: SpaceHints) -> ActionSpace {
        var space = ActionSpace(type: typeName, action: actionName)
        var facts = ConditionFacts()
        var tiers: [String] = []
        var defaultTiers = Set<String>()
        var roleNames: [String] = []
        var hasOwner = false
        var hasMembership = false
        var authMethods = hints.authMethods
        var anyMethod = false
        var maxAges: [Double] = []
        var appRoles = hints.appRoles
        var counterCaps: [String: Set<Int>] = [:]
        var readsAuth = hints.authEverywhere

        for policy in policies {
            for tier in policy.tiers where !tiers.contains(tier.id) { tiers.append(tier.id) }
            defaultTiers.insert(policy.tiers[policy.defaultTier].id)
            guard let type = policy.resourceTypes[typeName] else { continue }
            for role in type.roleNames where !roleNames.contains(role) { roleNames.append(role) }
            if type.owner != nil { hasOwner = true }
            if space.ownerField == nil { space.ownerField = type.owner }
            guard let action = type.actions[actionName] else { continue }
            for index in action.denyRules + action.allowRules {
                if let condition = policy.rules[index].condition { facts.add(condition) }
            }
            for requirement in Requirement.allCases {
                switch requirement.spaceDemand(in: action) {
                case .nothing: break
                case .standing: hasMembership = true
                case .auth(let methods, let maxAge):
                    readsAuth = true
                    if methods.isEmpty { anyMethod = true } else { authMethods.formUnion(methods) }
                    if let maxAge { maxAges.append(maxAge) }
                case .appRoles(let roles): appRoles.formUnion(roles)
                case .counter(let counter, let caps): counterCaps[counter, default: []].formUnion(caps.compactMap { $0 })
                case .conditions(let conditions): for condition in conditions { facts.add(condition) }
                }
            }
        }
        space.gaps = facts.gaps
        appRoles.formUnion(facts.appRoles)
        authMethods.formUnion(facts.authMethods)
        readsAuth = readsAuth || facts.readsAuth
        let standingMatters = hasMembership || facts.readsStanding || hints.standingEverywhere

        // Subjects: signed out, anonymous, each tier held, each non-default tier lapsed, and expiry boundaries
        // when a condition reads the expiry date.
        space.subjects = [.signedOut, .anonymous]
        let expiryCandidates = timeCandidates(facts, .field(.subscriptionExpiry))
        for tier in tiers {
            space.subjects.append(.tier(tier, expiry: nil))
            if !defaultTiers.contains(tier) || defaultTiers.count > 1 { space.subjects.append(.tier(tier, expiry: .ago(1))) }
            if facts.reads.contains(.field(.subscriptionExpiry)) {
                for candidate in expiryCandidates where candidate != .ago(1) { space.subjects.append(.tier(tier, expiry: candidate)) }
            }
        }

        if standingMatters {
            space.standings = [.nonMember]
            if hasOwner { space.standings.append(.owner) }
            space.standings += roleNames.map { .member($0) }
            space.anonymousHasStanding = facts.readsStanding
        }

        let roles = appRoles.sorted()
        if !roles.isEmpty {
            if roles.count <= maxAppRolesForSubsets {
                space.appRoleSets = (0..<(1 << roles.count)).map { mask in roles.indices.filter { mask & (1 << $0) != 0 }.map { roles[$0] } }
            } else {
                space.appRoleSets = [[]] + roles.map { [$0] } + [roles]
                space.gaps.append(("more than \(maxAppRolesForSubsets) app roles in play", nil))
            }
        }

        if readsAuth {
            let known = AuthMethod.all.filter { $0 != AuthMethod.anonymous }
            var methods = known.filter { authMethods.contains($0) }
            if anyMethod || methods.isEmpty { methods = [AuthMethod.apple] + methods.filter { $0 != AuthMethod.apple } }
            if let other = known.first(where: { !methods.contains($0) }) { methods.append(other) }
            var times: [TimeCandidate?] = [.ago(0)]
            var ages = Set<TimeCandidate>()
            for maxAge in maxAges { ages.formUnion([.ago(maxAge), .ago(maxAge + 1)]) }
            if facts.reads.contains(.field(.authVerifiedAt)) { ages.formUnion(timeCandidates(facts, .field(.authVerifiedAt))) }
            ages.remove(.ago(0))
            times += ages.sorted().map { $0 }
            if !maxAges.isEmpty || facts.reads.contains(.field(.authVerifiedAt)) { times.append(nil) }
            space.auths = [.none] + methods.flatMap { method in times.map { AuthCandidate.method(method, verified: $0) } }
        }

        if let literals = facts.literals[.field(.now)] {
            var nows = Set([baseNow])
            for case .timestamp(let t) in literals { nows.formUnion([t - 1, t, t + 1]) }
            space.nows = [baseNow] + nows.subtracting([baseNow]).sorted()
        }
        if let literals = facts.literals[.field(.resourceId)] {
            var ids: [String?] = ["r-1"]
            for case .string(let s) in literals.sorted(by: { "\($0)" < "\($1)" }) where !ids.contains(s) { ids.append(s) }
            if facts.presence.contains(.field(.resourceId)) { ids.append(nil) }
            space.resourceIDs = ids
        }

        var counterNames = Set(counterCaps.keys)
        for case .usage(let name) in facts.reads { counterNames.insert(name) }
        for name in counterNames.sorted() {
            var values = Set([0])
            for cap in counterCaps[name] ?? [] { values.formUnion([cap - 1, cap, cap + 1]) }
            for literal in facts.literals[.usage(name)] ?? [] { values.formUnion(integerNeighbours(literal)) }
            var list: [Int?] = values.sorted()
            if facts.presence.contains(.usage(name)) { list.append(nil) }
            space.counters.append((name, list))
        }

        for source in facts.reads.sorted(by: { "\($0)" < "\($1)" }) {
            guard case .attribute(let owner, let name) = source, let type = facts.attributeTypes[source] else { continue }
            if owner == .resource, case .attribute(name)? = space.ownerField { continue }
            let (values, gap) = attributeCandidates(type, source: source, facts: facts)
            if gap { space.gaps.append(("\(owner.rawValue).attributes.\(name): a list with many or non-string values", nil)) }
            space.attributes.append((owner, name, values))
        }
        return space
    }

    private static func timeCandidates(_ facts: ConditionFacts, _ source: SpaceSource) -> [TimeCandidate] {
        var set = Set<TimeCandidate>()
        for case .timestamp(let t) in facts.literals[source] ?? [] { set.formUnion([.at(t - 1), .at(t), .at(t + 1)]) }
        for d in facts.relative[source] ?? [] { set.formUnion([.ago(d - 1), .ago(d), .ago(d + 1)]) }
        if set.isEmpty { set.insert(.ago(0)) }
        return set.sorted()
    }

    private static func integerNeighbours(_ literal: ConditionValue) -> [Int] {
        switch literal {
        case .int(let i): return [i == .min ? i : i - 1, i, i == .max ? i : i + 1]
        case .double(let d) where d.isFinite && abs(d) < 1e15:
            let f = Int(d.rounded(.down)), c = Int(d.rounded(.up))
            return [f - 1, f, c, c + 1]
        default: return []
        }
    }

    private static func attributeCandidates(_ type: ConditionType, source: SpaceSource, facts: ConditionFacts) -> ([AttributeCandidate], gap: Bool) {
        let literals = facts.literals[source] ?? []
        var values: [AttributeCandidate] = [.absent]
        switch type {
        case .bool:
            values += [.value(.bool(true)), .value(.bool(false))]
        case .enumeration(let cases):
            values += cases.map { .value(.string($0)) }
        case .string:
            var strings = Set<String>()
            for case .string(let s) in literals { strings.insert(s) }
            var other = "other"
            while strings.contains(other) { other += "-value" }
            values += strings.sorted().map { .value(.string($0)) } + [.value(.string(other))]
        case .int:
            var ints = Set([0])
            for literal in literals { ints.formUnion(integerNeighbours(literal)) }
            values += ints.sorted().map { .value(.int($0)) }
        case .double:
            var doubles = Set([0.0])
            for literal in literals {
                switch literal {
                case .int(let i): doubles.formUnion([Double(i).nextDown, Double(i), Double(i).nextUp])
                case .double(let d): doubles.formUnion([d.nextDown, d, d.nextUp])
                default: break
                }
            }
            values += doubles.sorted().map { .value(.double($0)) }
        case .timestamp:
            values += timeCandidates(facts, source).map { .time($0) }
        case .duration:
            var seconds = Set([0.0])
            for case .duration(let d) in literals { seconds.formUnion([d - 1, d, d + 1]) }
            values += seconds.sorted().map { .value(.double($0)) }
        case .list(let element):
            let strings = (facts.listLiterals[source] ?? []).sorted()
            values.append(.value(.list([])))
            guard element == .string || { if case .enumeration = element { return true } else { return false } }(), strings.count <= 6 else {
                values += strings.map { .value(.list([.string($0)])) }
                return (values, true)
            }
            for mask in 1..<(1 << strings.count) {
                values.append(.value(.list(strings.indices.filter { mask & (1 << $0) != 0 }.map { .string(strings[$0]) })))
            }
        }
        return (values, false)
    }
}
