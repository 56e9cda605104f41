import Foundation
import PolicyEngine
import PolicyModel

/// The decision table of a policy set: per resource type, subject classes (rows) by actions (columns), each
/// cell the decision of one request of the request space `policy check` enumerates, decided by `decide`.
///
/// Rows that decide alike in every column are one row; an action whose decision also depends on the resource
/// or the request (a usage counter, an attribute, the time) gets one column per group of those values that
/// decide alike, labelled with them ("usage.sources ≥ 50").
public struct DecisionMatrix: Sendable {
    public var tables: [Table]
    /// Parts of a space the matrix only samples, and resource types too large to tabulate.
    public var diagnostics: [Diagnostic]

    /// One resource type's table.
    public struct Table: Sendable {
        public var resourceType: String
        public var rows: [Row]
        public var columns: [Column]
        /// `cells[row][column]`.
        public var cells: [[Cell]]
        /// Every subject class of the space, as the subject filter lists them ("pro (expired)").
        public var subjectClasses: [String]
        /// Requests decided to build the table (every point of the space, once per action).
        public var requests: Int
    }

    /// One row: the classes of subject (with standing, app roles and auth where they matter) that decide alike.
    public struct Row: Sendable {
        /// "A", "B", ...: how text and JSON name the row.
        public var id: String
        /// One description per block of classes: "signed in, member: editor".
        public var classes: [String]
        /// How many classes of the space (subject x standing x app roles x auth) the row stands for.
        public var merged: Int
        /// The subject classes (the first axis) the row includes, for the subject filter.
        public var subjects: [String]

        public var label: String { classes.joined(separator: "; ") }
    }

    /// One column: an action, and the resource and request values it is decided at when they matter.
    public struct Column: Sendable {
        public var action: String
        /// Empty when the action's decision depends on no resource or request value; else one entry per block.
        public var situations: [String]

        public var label: String { situations.isEmpty ? action : "\(action) (\(situations.joined(separator: "; ")))" }
    }

    /// One cell: the request it stands for (the first of its block) and that request's decision.
    public struct Cell: Sendable {
        public var request: Request
        public var decision: Decision
        /// How many requests of the space the cell stands for; all decide with this effect, reason and message.
        public var requests: Int
    }

    /// Most requests (classes x resource and request values) one resource type's table is built from.
    public static let maxRequestsPerType = 200_000

    /// The matrix of every resource type of `policy`, or of `resourceType` alone.
    public init(policy: CompiledPolicy, resourceType: String? = nil) {
        let types = policy.resourceTypeNames.filter { resourceType == nil || $0 == resourceType }
        let built = types.map { MatrixBuilder(policy: policy, type: $0).build() }
        tables = built.compactMap(\.table)
        diagnostics = built.flatMap(\.diagnostics).uniquedByMessage()
    }
}

/// Builds one table: enumerates the union of the type's action spaces and groups what decides alike.
struct MatrixBuilder {
    let policy: CompiledPolicy
    let type: String

    /// A decision as a cell compares it: two requests share a cell when effect, reason and message agree.
    private struct CellKey: Hashable, Sendable {
        var effect: Effect
        var reason: Reason
        var message: String?
    }

    func build() -> (table: DecisionMatrix.Table?, diagnostics: [Diagnostic]) {
        let actions = policy.actionNames(of: type)
        let space = Self.unionSpace(type: type, actions: actions, policy: policy)
        let check = SpaceCheck.matrix(bound: DecisionMatrix.maxRequestsPerType)
        var diagnostics: [Diagnostic] = space.gaps.map { gap in
            SpaceNotExhaustive(space: type, construct: gap.construct, check: check, at: gap.location).diagnostic
        }
        let count = space.count
        guard count <= DecisionMatrix.maxRequestsPerType else {
            diagnostics.append(SpaceTooLarge(space: type, count: count, check: check, at: nil).diagnostic)
            return (nil, diagnostics)
        }
        var collected: [SpacePoint] = []
        collected.reserveCapacity(count)
        space.forEach { collected.append($0) }
        let points = collected
        // `forEach` visits every situation (the axes after those of who asks) for one row before the next row.
        let rowAxes = Axis.asker.count
        let situations = space.axisSizes.dropFirst(rowAxes).reduce(1, *)
        let rowCount = count / situations

        // keys[a][r * situations + s]: the decision of action a at row r, situation s, interned per action.
        let keys: [[Int]] = actions.concurrentMap { action in
            var ids: [CellKey: Int] = [:]
            return points.map { point in
                var request = space.request(point)
                request.action = action
                let d = policy.decide(request)
                let key = CellKey(effect: d.effect, reason: d.reason, message: d.message)
                if let id = ids[key] { return id }
                ids[key] = ids.count
                return ids.count - 1
            }
        }

        // Columns: per action, situations grouped by the decisions they give every row.
        var columns: [(action: Int, situations: [Int])] = []
        for a in actions.indices {
            var groups: [[Int]: Int] = [:]
            var members: [[Int]] = []
            for s in 0..<situations {
                let vector = (0..<rowCount).map { keys[a][$0 * situations + s] }
                if let g = groups[vector] {
                    members[g].append(s)
                } else {
                    groups[vector] = members.count
                    members.append([s])
                }
            }
            columns += members.map { (a, $0) }
        }

        // Rows: grouped by their decision in every column.
        var rowGroups: [[Int]: Int] = [:]
        var rows: [[Int]] = []
        for r in 0..<rowCount {
            let vector = columns.map { keys[$0.action][r * situations + $0.situations[0]] }
            if let g = rowGroups[vector] {
                rows[g].append(r)
            } else {
                rowGroups[vector] = rows.count
                rows.append([r])
            }
        }

        let describer = MatrixDescriber(space: space)
        let table = DecisionMatrix.Table(
            resourceType: type,
            rows: rows.enumerated().map { index, members in
                let rowPoints = members.map { SpacePoint(indices: Array(points[$0 * situations].indices.prefix(rowAxes))) }
                return DecisionMatrix.Row(
                    id: Self.rowID(index), classes: describer.rows(rowPoints), merged: members.count,
                    subjects: Set(rowPoints.map { space.index(.subject, of: $0) }).sorted().map { space.label(.subject, value: $0) })
            },
            columns: columns.map { column in
                let situationPoints = column.situations.map { SpacePoint(indices: Array(points[$0].indices.dropFirst(rowAxes))) }
                return DecisionMatrix.Column(
                    action: actions[column.action],
                    situations: column.situations.count == situations ? [] : describer.situations(situationPoints))
            },
            cells: rows.map { members in
                columns.map { column in
                    var request = space.request(points[members[0] * situations + column.situations[0]])
                    request.action = actions[column.action]
                    return DecisionMatrix.Cell(
                        request: request, decision: policy.decide(request), requests: members.count * column.situations.count)
                }
            },
            subjectClasses: space.subjects.indices.map { space.label(.subject, value: $0) },
            requests: count * actions.count)
        return (table, diagnostics)
    }

    /// "A" ... "Z", then "AA", "AB" ...
    static func rowID(_ index: Int) -> String {
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        return index < 26 ? String(letters[index]) : rowID(index / 26 - 1) + String(letters[index % 26])
    }

    /// One space holding every value any of the type's actions is tried at, so each action's own space is
    /// inside it and every action is decided on the same rows.
    static func unionSpace(type: String, actions: [String], policy: CompiledPolicy) -> ActionSpace {
        let spaces = actions.map { RequestSpace.build(type: type, action: $0, policies: [policy], hints: SpaceHints()) }
        var union = ActionSpace(type: type, action: actions.first ?? "")
        guard let first = spaces.first else { return union }
        union = first
        var counters: [String: [Int?]] = [:]
        var attributes: [String: (owner: AttributeOwner, name: String, values: [AttributeCandidate])] = [:]
        var gaps = Set<String>()
        union.gaps = []
        for space in spaces {
            appendNew(space.subjects, to: &union.subjects)
            appendNew(space.standings, to: &union.standings)
            appendNew(space.appRoleSets, to: &union.appRoleSets)
            appendNew(space.auths, to: &union.auths)
            appendNew(space.nows, to: &union.nows)
            appendNew(space.resourceIDs, to: &union.resourceIDs)
            for counter in space.counters { appendNew(counter.values, to: &counters[counter.name, default: []]) }
            for attribute in space.attributes {
                let key = "\(attribute.owner.rawValue).\(attribute.name)"
                var entry = attributes[key] ?? (attribute.owner, attribute.name, [])
                appendNew(attribute.values, to: &entry.values)
                attributes[key] = entry
            }
            union.anonymousHasStanding = union.anonymousHasStanding || space.anonymousHasStanding
            if union.ownerField == nil { union.ownerField = space.ownerField }
            for gap in space.gaps where gaps.insert(gap.construct).inserted { union.gaps.append(gap) }
        }
        union.nows = [RequestSpace.baseNow] + union.nows.filter { $0 != RequestSpace.baseNow }.sorted()
        union.counters = counters.keys.sorted().map { name in
            let values = counters[name]!
            return (name, values.compactMap { $0 }.sorted() + (values.contains(nil) ? [nil] : []))
        }
        union.attributes = attributes.keys.sorted().map { attributes[$0]! }
        return union
    }

    private static func appendNew<T: Equatable>(_ values: [T], to list: inout [T]) {
        for value in values where !list.contains(value) { list.append(value) }
    }
}

/// Words for blocks of rows and columns.
struct MatrixDescriber {
    let space: ActionSpace

    /// Row points (subject, standing, app roles, auth) as sentences, one per block: "signed in, member: editor".
    func rows(_ points: [SpacePoint]) -> [String] {
        let cover = Cover(space: space)
        let blocks = Cover.joined(cover.cubes(points), size: cover.cubeSize)
        let signedIn = cover.signedInSubjects
        return blocks.map { block in
            let p = block.projection
            let subjects = p[space.position(of: .subject)]
            var parts: [String] = []
            if subjects.count < space.size(of: .subject) {
                parts.append(subjects == signedIn ? "signed in" : subjects.sorted().map { space.label(.subject, value: $0) }.joined(separator: ", "))
            }
            for axis in Axis.asker.dropFirst() {
                let values = p[space.position(of: axis)]
                guard values.count < cover.allowedCount(axis, subjects: subjects) else { continue }
                switch axis {
                case .standing: parts.append(values.sorted().map { standingLabel(space.standings[$0]) }.joined(separator: " or "))
                case .appRoles: parts.append("app roles " + values.sorted().map { space.label(axis, value: $0) }.joined(separator: " or "))
                case .auth: parts.append("auth " + auths(values).joined(separator: " or "))
                default: parts.append(values.sorted().map { space.label(axis, value: $0) }.joined(separator: " or "))
                }
            }
            return parts.isEmpty ? "everyone" : parts.joined(separator: ", ")
        }
    }

    /// Situation points (the axes after auth) as phrases, one per block: "usage.sources ≥ 50".
    func situations(_ points: [SpacePoint]) -> [String] {
        let size: ([Set<Int>]) -> Int = { $0.reduce(1) { $0 * $1.count } }
        let blocks = Cover.joined(Cover.productCubes(points), size: size)
        let axes = Array(space.axes.dropFirst(Axis.asker.count))
        return blocks.map { block in
            let parts = block.projection.indices.compactMap { i -> String? in
                let axis = axes[i]
                guard block.projection[i].count < space.size(of: axis) else { return nil }
                // The subject's privacy-style settings by their own name: "analytics true".
                var name = space.name(of: axis)
                if name.hasPrefix("subject.attributes.") { name.removeFirst("subject.attributes.".count) }
                return "\(name) \(values(axis, block.projection[i]))"
            }
            return parts.isEmpty ? "any" : parts.joined(separator: ", ")
        }
    }

    /// Auth values per method, freshness as a range where the chosen times run on from one end:
    /// "pin verified within 5 minutes", "pin verified 301 seconds to 15 minutes ago", "apple verified 901 seconds
    /// ago or earlier (or no time)".
    private func auths(_ chosen: Set<Int>) -> [String] {
        var methods: [String] = []
        var times: [String: [TimeCandidate?]] = [:]
        var labels: [String] = []
        for value in chosen.sorted() {
            switch space.auths[value] {
            case .none: labels.append("none")
            case .method(let method, let time):
                if times[method] == nil { methods.append(method) }
                times[method, default: []].append(time)
            }
        }
        func order(_ a: TimeCandidate?, _ b: TimeCandidate?) -> Bool {
            switch (a, b) {
            case (let a?, let b?): a < b
            case (_?, nil): true
            default: false
            }
        }
        for method in methods {
            let all = space.auths.compactMap { auth -> TimeCandidate?? in
                if case .method(method, let time) = auth { return .some(time) }
                return nil
            }.sorted(by: order)
            let picked = times[method]!.sorted(by: order)
            let start = all.firstIndex { $0 == picked[0] }!
            let contiguous = Array(all[start..<min(all.count, start + picked.count)]) == picked
            if picked.count == all.count {
                labels.append("\(method) (any time)")
            } else if contiguous, start == 0, picked.count > 1, let last = picked.last!, case .ago(let seconds) = last, seconds > 0 {
                labels.append("\(method) verified within \(CompiledPolicy.formatDuration(seconds))")
            } else if contiguous, start + picked.count == all.count, picked.count > 1, case .ago(let seconds)? = picked[0], all.last! == nil {
                labels.append("\(method) verified \(CompiledPolicy.formatDuration(seconds)) ago or earlier (or no time)")
            } else if contiguous, picked.count > 1, case .ago(let from)? = picked[0], case .ago(let to)? = picked.last!, from > 0 {
                labels.append("\(method) verified \(CompiledPolicy.formatDuration(from)) to \(CompiledPolicy.formatDuration(to)) ago")
            } else {
                labels += picked.map { time in space.label(.auth, value: space.auths.firstIndex(of: .method(method, verified: time))!) }
            }
        }
        return labels
    }

    private func standingLabel(_ standing: Standing) -> String {
        switch standing {
        case .nonMember: "non-member"
        case .owner: "owner"
        case .member(let role): "member: \(role)"
        }
    }

    /// The values of one axis: counters as ranges where the values run on ("≤ 49", "≥ 50"), else a list.
    private func values(_ axis: Axis, _ chosen: Set<Int>) -> String {
        let list = chosen.sorted()
        if case .counter(let counter) = axis {
            let values = space.counters[counter].values
            let ints = values.indices.filter { values[$0] != nil }
            let chosenInts = list.filter { values[$0] != nil }
            var text: [String] = []
            if let low = chosenInts.first, let high = chosenInts.last, high - low + 1 == chosenInts.count {
                let lowValue = values[low]!, highValue = values[high]!
                if low == ints.first, high != ints.last {
                    text.append("≤ \(highValue)")
                } else if high == ints.last, low != ints.first {
                    text.append("≥ \(lowValue)")
                } else if low == high {
                    text.append("\(lowValue)")
                } else {
                    text.append("\(lowValue)–\(highValue)")
                }
            } else {
                text += chosenInts.map { "\(values[$0]!)" }
            }
            if chosenInts.count < list.count { text.append("absent") }
            return text.joined(separator: " or ")
        }
        return list.map { space.label(axis, value: $0) }.joined(separator: " or ")
    }
}
