import Foundation
import PolicyEngine
import PolicyModel

/// Who is asking, as the space varies it.
enum SubjectClass: Hashable {
    case signedOut
    case anonymous
    /// Signed in holding `tier`; `expiry` nil means no expiry date.
    case tier(String, expiry: TimeCandidate?)

    func isExpired(now: Date) -> Bool {
        guard case .tier(_, let expiry?) = self else { return false }
        return expiry.date(now: now) < now
    }
}

/// The subject's standing on the resource.
enum Standing: Hashable {
    case nonMember
    case owner
    case member(String)

    var label: String {
        switch self {
        case .nonMember: "non-member"
        case .owner: "owner"
        case .member(let role): role
        }
    }
}

/// How the subject was verified.
enum AuthCandidate: Hashable {
    /// No auth block.
    case none
    case method(String, verified: TimeCandidate?)
}

/// A value an attribute is tried with.
enum AttributeCandidate: Hashable {
    case absent
    case value(Value)
    case time(TimeCandidate)
}

/// Everything a selector or a report needs to know about the dimensions a set of policies spans, beyond
/// what the policies' own checks read: names the invariants mention make those dimensions count everywhere.
struct SpaceHints {
    var appRoles: Set<String> = []
    var authMethods: Set<String> = []
    var standingEverywhere = false
    var authEverywhere = false
}

/// The finite request space of one (resource type, action): a product of axes, each axis the values at which
/// some check or condition of the action can change its answer, plus one value on each side.
///
/// Signed-out subjects take only the first standing and auth value (they have no id to own or verify with);
/// anonymous subjects take only the first auth value, and the first standing unless a condition reads ids.
struct ActionSpace {
    let type: String
    let action: String
    var subjects: [SubjectClass] = []
    var standings: [Standing] = [.nonMember]
    var appRoleSets: [[String]] = [[]]
    var auths: [AuthCandidate] = [.method(AuthMethod.apple, verified: .ago(0))]
    var nows: [Double] = [RequestSpace.baseNow]
    var resourceIDs: [String?] = ["r-1"]
    var counters: [(name: String, values: [Int?])] = []
    var attributes: [(owner: AttributeOwner, name: String, values: [AttributeCandidate])] = []
    var anonymousHasStanding = false
    var ownerField: OwnerField?
    /// Constructs in this action's conditions that make the space a sample, not a proof.
    var gaps: [(construct: String, location: SourceLocation?)] = []

    var isExhaustive: Bool { gaps.isEmpty }

    /// Sizes of the axes after the subject, in `SpacePoint.indices` order.
    private var axisSizes: [Int] {
        [standings.count, appRoleSets.count, auths.count, nows.count, resourceIDs.count]
            + counters.map(\.values.count) + attributes.map(\.values.count)
    }

    /// How many requests the space holds.
    var count: Int {
        let rest = axisSizes
        let tail = rest.dropFirst(3).reduce(1) { $0.multipliedReportingOverflow(by: $1).overflow ? Int.max : $0 * $1 }
        var total = 0
        for subject in subjects {
            let standing = allowedStandings(subject)
            let auth = allowedAuths(subject)
            let (product, overflow) = (standing * rest[1] * auth).multipliedReportingOverflow(by: tail)
            if overflow { return Int.max }
            total = total.addingReportingOverflow(product).overflow ? Int.max : total + product
        }
        return total
    }

    private func allowedStandings(_ subject: SubjectClass) -> Int {
        switch subject {
        case .signedOut: 1
        case .anonymous: anonymousHasStanding ? standings.count : 1
        case .tier: standings.count
        }
    }

    private func allowedAuths(_ subject: SubjectClass) -> Int {
        if case .tier = subject { return auths.count }
        return 1
    }

    /// Visits every point of the space in a fixed order: subject class first, then standing, app roles, auth ...
    func forEach(_ body: (SpacePoint) throws -> Void) rethrows {
        let sizes = axisSizes
        var indices = [Int](repeating: 0, count: sizes.count + 1)
        for s in subjects.indices {
            var limits = sizes
            limits[0] = allowedStandings(subjects[s])
            limits[2] = allowedAuths(subjects[s])
            indices[0] = s
            for i in 1..<indices.count { indices[i] = 0 }
            while true {
                try body(SpacePoint(indices: indices))
                var axis = limits.count - 1
                while axis >= 0 {
                    indices[axis + 1] += 1
                    if indices[axis + 1] < limits[axis] { break }
                    indices[axis + 1] = 0
                    axis -= 1
                }
                if axis < 0 { break }
            }
        }
    }

    func subject(_ point: SpacePoint) -> SubjectClass { subjects[point.indices[0]] }
    func standing(_ point: SpacePoint) -> Standing { standings[point.indices[1]] }
    func appRoles(_ point: SpacePoint) -> [String] { appRoleSets[point.indices[2]] }
    func auth(_ point: SpacePoint) -> AuthCandidate {
        if case .tier = subject(point) { return auths[point.indices[3]] }
        return .none
    }

    /// The concrete request at a point.
    func request(_ point: SpacePoint) -> Request {
        let i = point.indices
        let now = Date(timeIntervalSince1970: nows[i[4]])
        var subject = Subject()
        let subjectID: String?
        switch subjects[i[0]] {
        case .signedOut:
            subjectID = nil
        case .anonymous:
            subjectID = "u-anon"
            subject.auth = Authentication(method: AuthMethod.anonymous, verifiedAt: now)
        case .tier(let tier, let expiry):
            subjectID = "u-subject"
            subject.tier = tier
            subject.subscriptionExpiry = expiry?.date(now: now)
            switch auths[i[3]] {
            case .none: break
            case .method(let method, let verified): subject.auth = Authentication(method: method, verifiedAt: verified?.date(now: now))
            }
        }
        subject.id = subjectID
        subject.roles = appRoleSets[i[2]]
        var resource = Resource(type: type, id: resourceIDs[i[5]])
        var next = 6
        for counter in counters {
            if let value = counter.values[i[next]] { resource.usage[counter.name] = value }
            next += 1
        }
        var context = Context(now: now)
        for attribute in attributes {
            let value: Value?
            switch attribute.values[i[next]] {
            case .absent: value = nil
            case .value(let v): value = v
            case .time(let t): value = .string(Timestamp.format(t.date(now: now)))
            }
            next += 1
            guard let value else { continue }
            switch attribute.owner {
            case .subject: subject.attributes[attribute.name] = value
            case .resource: resource.attributes[attribute.name] = value
            case .context: context.attributes[attribute.name] = value
            }
        }
        // Standing last: it decides the owner field, whatever an attribute axis put there.
        let owner = RequestSpace.otherUser
        switch standings[i[1]] {
        case .owner: setOwner(subjectID ?? owner, in: &resource)
        case .member(let role):
            setOwner(owner, in: &resource)
            if let subjectID { resource.members[subjectID] = role }
        case .nonMember:
            if ownerField != nil { setOwner(owner, in: &resource) }
        }
        return Request(subject: subject, action: action, resource: resource, context: context)
    }

    private func setOwner(_ id: String, in resource: inout Resource) {
        switch ownerField {
        case .attribute(let name)?: resource.attributes[name] = .string(id)
        case .ownerId?, nil: resource.ownerId = id
        }
    }

    /// Sizes of every axis, the subject's first, in `SpacePoint.indices` order.
    var allAxisSizes: [Int] { [subjects.count] + axisSizes }

    /// The name of an axis, as reports and invariants say it.
    func axisName(_ axis: Int) -> String {
        switch axis {
        case 0: return "subject"
        case 1: return "role"
        case 2: return "appRoles"
        case 3: return "auth"
        case 4: return "now"
        case 5: return "resource.id"
        default:
            let i = axis - 6
            if i < counters.count { return "usage.\(counters[i].name)" }
            let attribute = attributes[i - counters.count]
            return "\(attribute.owner.rawValue).attributes.\(attribute.name)"
        }
    }

    /// A value of an axis as a reader sees it: "pro (expired)", "editor", "pin verified 5 minutes ago", "49".
    func label(axis: Int, value: Int) -> String {
        let now = Date(timeIntervalSince1970: nows[0])
        switch axis {
        case 0: return label(subjects[value], now: now)
        case 1: return standings[value].label
        case 2: return appRoleSets[value].isEmpty ? "none" : appRoleSets[value].joined(separator: "+")
        case 3: return label(auths[value])
        case 4: return Timestamp.format(Date(timeIntervalSince1970: nows[value]))
        case 5: return resourceIDs[value] ?? "absent"
        default:
            let i = axis - 6
            if i < counters.count { return counters[i].values[value].map(String.init) ?? "absent" }
            return label(attributes[i - counters.count].values[value], now: now)
        }
    }

    /// The point's value on each axis that has more than one value, for reports.
    func describe(_ point: SpacePoint) -> [(axis: String, value: String)] {
        let sizes = allAxisSizes
        let signedIn: Bool
        if case .tier = subject(point) { signedIn = true } else { signedIn = false }
        return point.indices.indices.compactMap { axis in
            // The subject always; other axes when they vary; auth only for a signed-in subject (others have none).
            guard axis == 0 || sizes[axis] > 1, axis != 3 || signedIn else { return nil }
            return (axisName(axis), label(axis: axis, value: point.indices[axis]))
        }
    }

    private func label(_ subject: SubjectClass, now: Date) -> String {
        switch subject {
        case .signedOut: return "signed out"
        case .anonymous: return "anonymous"
        case .tier(let tier, nil): return tier
        case .tier(let tier, let expiry?):
            return subject.isExpired(now: now) ? "\(tier) (expired)" : "\(tier) (expires \(Timestamp.format(expiry.date(now: now))))"
        }
    }

    private func label(_ auth: AuthCandidate) -> String {
        switch auth {
        case .none: return "none"
        case .method(let method, nil): return "\(method), no time"
        case .method(let method, .ago(let seconds)?): return "\(method) \(RequestSpace.age(seconds))"
        case .method(let method, .at(let t)?): return "\(method) at \(Timestamp.format(Date(timeIntervalSince1970: t)))"
        }
    }

    private func label(_ value: AttributeCandidate, now: Date) -> String {
        switch value {
        case .absent: return "absent"
        case .value(let v): return JSONText(v).rendered(pretty: false)
        case .time(let t): return Timestamp.format(t.date(now: now))
        }
    }
}

/// One request of an `ActionSpace`: an index per axis.
struct SpacePoint: Hashable {
    var indices: [Int]
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
            if action.membership != nil { hasMembership = true }
            if let auth = action.auth {
                readsAuth = true
                if auth.methods.isEmpty { anyMethod = true } else { authMethods.formUnion(auth.methods) }
                if let maxAge = auth.maxAge { maxAges.append(maxAge) }
            }
            if let needed = action.appRoles { appRoles.formUnion(needed.roles) }
            if let limit = action.limit {
                counterCaps[limit.counter, default: []].formUnion(limit.caps.compactMap { $0 })
            }
            for index in action.denyRules + action.allowRules {
                if let condition = policy.rules[index].condition { facts.add(condition) }
            }
            if let condition = action.consent?.condition { facts.add(condition) }
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
