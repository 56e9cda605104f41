import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// A decision reduced to what a reviewer compares: the effect and its reason.
public struct Outcome: Sendable, Hashable, CustomStringConvertible {
    public var effect: Effect
    public var reason: Reason

    public init(_ decision: Decision) {
        effect = decision.effect
        reason = decision.reason
    }

    public var description: String { effect == .allow ? "allow" : "deny (\(reason.rawValue))" }
}

/// How two versions of a policy set decide differently over the request space both span.
public struct DecisionDiff: Sendable {
    /// One group of requests whose decision changed the same way: a (resource type, action), the old and
    /// new outcome, and the values of the request space's axes that describe exactly those requests.
    public struct Change: Sendable {
        public var resourceType: String
        public var action: String
        public var from: Outcome
        public var to: Outcome
        /// Axis name to the values the changed requests take; axes taking every value are left out.
        public var selector: [(axis: String, values: [String])]
        /// How many requests of the space the group holds, and how many the action's space holds.
        public var requests: Int
        public var ofRequests: Int
        public var example: Request

        /// A deny became an allow.
        public var isWidening: Bool { from.effect == .deny && to.effect == .allow }

        /// "role editor loses 'delete' on project": who, what happened, on what.
        public var summary: String {
            let who = selector.isEmpty ? "every request" : selector.map { "\($0.axis) \($0.values.joined(separator: " or "))" }.joined(separator: ", ")
            let verb: String
            switch (from.effect, to.effect) {
            case (.deny, .allow): verb = "gains"
            case (.allow, .deny): verb = "loses"
            default: verb = "is refused differently for"
            }
            return "\(who) \(verb) '\(action)' on \(resourceType)"
        }
    }

    public var changes: [Change]
    /// Requests enumerated, and how many of them changed decision.
    public var requests: Int
    public var changed: Int
    /// Changed requests that went from deny to allow.
    public var widening: Int
    /// Warnings: parts of the space that are sampled rather than exhaustive, or too large to enumerate.
    public var diagnostics: [Diagnostic]
}

/// Compares two compiled policies over the union of their request spaces.
public enum PolicyDiffer {
    public static func diff(old: CompiledPolicy, new: CompiledPolicy) -> DecisionDiff {
        // Each (type, action) is compared on its own, on every core; the parts are joined in order.
        let parts = RequestSpace.build([old, new]).concurrentMap { compare($0, old: old, new: new) }
        var result = DecisionDiff(changes: [], requests: 0, changed: 0, widening: 0, diagnostics: [])
        for part in parts {
            result.changes += part.changes
            result.requests += part.requests
            result.changed += part.changed
            result.widening += part.widening
            result.diagnostics += part.diagnostics
        }
        result.diagnostics = result.diagnostics.uniquedByMessage()
        return result
    }

    /// The diff of one (type, action).
    private static func compare(_ space: ActionSpace, old: CompiledPolicy, new: CompiledPolicy) -> DecisionDiff {
        var part = DecisionDiff(changes: [], requests: 0, changed: 0, widening: 0, diagnostics: [])
        let count = space.count
        guard count <= InvariantProver.maxRequestsPerAction else {
            part.diagnostics.append(SpaceTooLarge(space: "\(space.type).\(space.action)", count: count, check: .diff, at: nil).diagnostic)
            return part
        }
        for gap in space.gaps {
            part.diagnostics.append(
                SpaceNotExhaustive(space: "\(space.type).\(space.action)", construct: gap.construct, check: .diff, at: gap.location).diagnostic)
        }
        part.requests = count
        var buckets: [Pair: [SpacePoint]] = [:]
        var order: [Pair] = []
        space.forEach { point in
            let request = space.request(point)
            let before = Outcome(old.decide(request)), after = Outcome(new.decide(request))
            guard before != after else { return }
            let key = Pair(from: before, to: after)
            if buckets[key] == nil { order.append(key) }
            buckets[key, default: []].append(point)
        }
        let cover = Cover(space: space)
        for key in order {
            let points = buckets[key]!
            part.changed += points.count
            if key.from.effect == .deny, key.to.effect == .allow { part.widening += points.count }
            for cube in cover.cubes(points) {
                part.changes.append(DecisionDiff.Change(
                    resourceType: space.type, action: space.action, from: key.from, to: key.to,
                    selector: cover.describe(cube.projection), requests: cube.points.count, ofRequests: count,
                    example: space.request(cube.points[0])))
            }
        }
        return part
    }

    private struct Pair: Hashable {
        var from: Outcome
        var to: Outcome
    }
}

/// Splits a set of points of one space into "cubes": sets that are exactly every point of the space whose
/// axis values lie in given sets, so each can be described as "role editor, subject pro or team".
struct Cover {
    let space: ActionSpace

    struct Cube {
        var points: [SpacePoint]
        /// Per axis position (`SpacePoint.indices`), the values the points take.
        var projection: [Set<Int>]
    }


    func cubes(_ points: [SpacePoint]) -> [Cube] { Self.cubes(points, size: cubeSize) }

    /// Cubes of points whose axes are free of the subject's restrictions (any product of values is a point).
    static func productCubes(_ points: [SpacePoint]) -> [Cube] {
        cubes(points) { $0.reduce(1) { $0 * $1.count } }
    }

    /// Splits `points` into cubes, `size` telling how many points the product of a projection holds.
    static func cubes(_ points: [SpacePoint], size: ([Set<Int>]) -> Int) -> [Cube] {
        guard let first = points.first else { return [] }
        var projection = Array(repeating: Set<Int>(), count: first.indices.count)
        for point in points {
            for (axis, value) in point.indices.enumerated() { projection[axis].insert(value) }
        }
        if size(projection) == points.count { return [Cube(points: points, projection: projection)] }
        // Not a cube: split on the first axis that varies and cover each part.
        guard let axis = projection.indices.first(where: { projection[$0].count > 1 }) else {
            return [Cube(points: points, projection: projection)]
        }
        var parts: [Int: [SpacePoint]] = [:]
        for point in points { parts[point.indices[axis], default: []].append(point) }
        return parts.keys.sorted().flatMap { cubes(parts[$0]!, size: size) }
    }

    /// Joins cubes that differ on one axis only while their union is still a cube, so "free" and
    /// "pro (expired)" read as one line: fewer, larger cubes than the first-axis split gives.
    static func joined(_ cubes: [Cube], size: ([Set<Int>]) -> Int) -> [Cube] {
        var cubes = cubes
        var joinedAny = true
        while joinedAny {
            joinedAny = false
            search: for i in cubes.indices {
                for j in cubes.indices where j > i {
                    let a = cubes[i].projection, b = cubes[j].projection
                    let differing = a.indices.filter { a[$0] != b[$0] }
                    guard differing.count == 1 else { continue }
                    var union = a
                    union[differing[0]].formUnion(b[differing[0]])
                    guard size(union) == cubes[i].points.count + cubes[j].points.count else { continue }
                    cubes[i] = Cube(points: cubes[i].points + cubes[j].points, projection: union)
                    cubes.remove(at: j)
                    joinedAny = true
                    break search
                }
            }
        }
        return cubes
    }

    /// How many points of the space lie in the product of `projection` (signed-out and anonymous subjects
    /// take only the first standing and auth value).
    func cubeSize(_ projection: [Set<Int>]) -> Int {
        var total = 0
        for s in projection[0] {
            var product = 1
            for position in 1..<projection.count {
                var values = projection[position]
                if space.isRestricted(space.axes[position], for: space.subjects[s]) { values = values.intersection([0]) }
                product *= values.count
            }
            total += product
        }
        return total
    }

    /// The axes of a cube that do not take every value, with the values' labels.
    func describe(_ projection: [Set<Int>]) -> [(axis: String, values: [String])] {
        let axes = space.axes
        var result: [(String, [String])] = []
        for position in projection.indices {
            let axis = axes[position]
            let values = projection[position]
            let full = axis == .subject ? space.size(of: .subject) : allowedCount(axis, subjects: projection[0])
            guard values.count < full else { continue }
            if axis == .subject, values == signedInSubjects {
                result.append(("subject", ["signed in"]))
                continue
            }
            let labels = values.sorted().map { space.label(axis, value: $0) }
            result.append((space.name(of: axis), labels))
        }
        return result
    }

    /// The subject values that are signed in.
    var signedInSubjects: Set<Int> { Set(space.subjects.indices.filter { space.subjects[$0].isSignedIn }) }

    /// Every value an axis can take for the given subjects.
    func allowedCount(_ axis: Axis, subjects: Set<Int>) -> Int {
        subjects.allSatisfy { space.isRestricted(axis, for: space.subjects[$0]) } ? 1 : space.size(of: axis)
    }

}

extension Array where Element == Diagnostic {
    func uniquedByMessage() -> [Diagnostic] {
        var seen = Set<String>()
        return filter { seen.insert($0.code + $0.message).inserted }
    }
}
