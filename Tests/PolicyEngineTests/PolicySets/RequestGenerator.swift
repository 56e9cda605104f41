import Foundation
import PolicyCompiler
import PolicyModel

/// Seeded requests aimed at a policy set's edges: signed out and anonymous subjects, unknown and expired
/// tiers, owners, members and strangers, usage at cap-1, cap and cap+1 (and at the integer extremes),
/// verification just inside and just outside each `maxAge`, attributes missing, null or of the wrong type,
/// and now and then an unknown resource type or action.
struct RequestGenerator {
    static let now = Date(timeIntervalSince1970: 1_795_348_800)  // 2026-11-22T12:00:00Z
    static let ids: [String?] = [nil, "", "u1", "u2", "u3", "anon"]

    var rng: Rng
    let model: PolicySetModel
    private let maxAges: [Double]
    private let counters: [(name: String, caps: [Int])]

    init(rng: Rng, model: PolicySetModel) {
        self.rng = rng
        self.model = model
        var ages = model.resources.flatMap { $0.actions.compactMap { $0.auth?.maxAgeSeconds } }
        ages += [300, 900]
        maxAges = ages
        counters = model.limits.map { ($0.counter ?? $0.id, $0.caps.map(\.cap)) } + [("items", [1]), ("sources", [50])]
    }

    mutating func make() -> Request {
        let now = Self.now
        var subject = Subject(id: rng.pick(Self.ids))
        let tiers = model.tierIDs
        subject.tier = rng.pick(tiers + [nil, "premium", tiers[0].uppercased()] + tiers)
        subject.subscriptionExpiry = rng.pick([nil, nil, now - 86_400, now - 1, now, now + 1, now + 86_400])
        subject.roles = rng.subset(model.appRoles.map(\.id) + ["Admin", "guest"], atLeast: 0)
        if rng.chance(82) {
            let method = rng.pick(AuthMethod.all + AuthMethod.all + ["faceid", "Anonymous"])
            var verifiedAt: Date?
            if rng.chance(85) {
                let maxAge = rng.pick(maxAges)
                verifiedAt = now - rng.pick([maxAge - 1, maxAge, maxAge + 1, maxAge - 0.5, maxAge + 0.001, 0, -60, 100_000])
            }
            subject.auth = Authentication(method: method, verifiedAt: verifiedAt)
        }
        subject.attributes = attributes("subject")

        var type = rng.pick(model.resources)
        var typeName = type.id
        if rng.chance(4) {
            typeName = rng.pick(["folder", type.id.uppercased(), "", " \(type.id)"])
        } else if rng.chance(3) {
            type = rng.pick(model.resources)  // a type whose actions may not include the one chosen below
        }
        var action = rng.pick(type.actions).id
        if rng.chance(4) { action = rng.pick(["archive", action.uppercased(), "*", "\(action) "]) }
        if rng.chance(3) { action = rng.pick(rng.pick(model.resources).actions).id }

        var resource = Resource(type: typeName)
        resource.id = rng.pick([nil, "r1", "proj-9"])
        resource.ownerId = rng.pick([nil, "u1", "u2", "u3", "", "anon"])
        let roleNames = type.roles.map(\.id) + ["guest", "Owner"]
        for id in ["u1", "u2", "u3", "anon"] where rng.chance(35) { resource.members[id] = rng.pick(roleNames) }
        for (name, caps) in counters where rng.chance(70) {
            let cap = rng.pick(caps.isEmpty ? [1] : caps)
            resource.usage[name] = rng.pick([0, cap - 1, cap, cap + 1, cap - 1, cap, cap + 1, -1, 49, 50, Int.max, Int.min])
        }
        resource.attributes = attributes("resource")
        if rng.chance(40) { resource.attributes["createdBy"] = rng.pick([.string("u1"), .string("u2"), .string(""), .int(1), .null]) }

        let context = Context(now: now, attributes: attributes("context"))
        return Request(subject: subject, action: action, resource: resource, context: context)
    }

    /// Values for the scope's declared attributes: mostly well typed, some null, of the wrong type, or absent.
    private mutating func attributes(_ scope: String) -> [String: Value] {
        var values: [String: Value] = [:]
        for attribute in model.attributes where attribute.scope == scope && rng.chance(75) {
            values[attribute.name] = rng.pick(Self.values(for: attribute.type))
        }
        if rng.chance(5) { values["undeclared"] = .string("x") }
        return values
    }

    static func values(for type: AttributeType) -> [Value] {
        switch type {
        case .bool: [.bool(true), .bool(false), .bool(true), .null, .string("yes"), .int(1)]
        case .int: [.int(18), .int(17), .int(0), .int(-2), .int(Int.min), .double(18.0), .double(17.5), .string("18")]
        case .double: [.double(500.5), .double(499.9), .int(500), .double(-1e308), .double(1.7e308), .string("x")]
        case .string: [.string("eu"), .string("e"), .string(""), .string("us"), .string("é"), .int(3), .null]
        case .timestamp:
            [.string("2026-11-22T12:00:00Z"), .string("2026-11-22T12:00:01Z"), .string("2027-01-01T00:00:00.5Z"), .string("soon"), .int(0)]
        case .duration: [.string("5m"), .string("5m1s"), .int(300), .double(299.5), .string("bad"), .string("-1s")]
        case .enumeration(let allowed): allowed.map { .string($0) } + [.string("maximal"), .int(1)]
        case .list: [.list([.string("a")]), .list([]), .list([.string("b"), .string("a")]), .list([.int(1)]), .string("a")]
        }
    }
}
