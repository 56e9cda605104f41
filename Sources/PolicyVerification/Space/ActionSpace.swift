import Foundation
import PolicyEngine
import PolicyModel

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

    /// Every axis, in position (`SpacePoint.indices`) order.
    var axes: [Axis] { Axis.fixed + counters.indices.map { .counter($0) } + attributes.indices.map { .attribute($0) } }

    /// How many values an axis holds.
    func size(of axis: Axis) -> Int {
        switch axis {
        case .subject: subjects.count
        case .standing: standings.count
        case .appRoles: appRoleSets.count
        case .auth: auths.count
        case .now: nows.count
        case .resourceID: resourceIDs.count
        case .counter(let i): counters[i].values.count
        case .attribute(let i): attributes[i].values.count
        }
    }

    /// Sizes of every axis, in position order.
    var axisSizes: [Int] { axes.map(size(of:)) }

    /// Whether `subject` takes only the first value of `axis`: a signed-out subject has no standing and no auth,
    /// an anonymous one no auth, and no standing unless a condition reads ids.
    func isRestricted(_ axis: Axis, for subject: SubjectClass) -> Bool {
        switch (subject, axis) {
        case (.signedOut, .standing), (.signedOut, .auth), (.anonymous, .auth): true
        case (.anonymous, .standing): !anonymousHasStanding
        default: false
        }
    }

    /// How many values of `axis` the space pairs with `subject`.
    func size(of axis: Axis, for subject: SubjectClass) -> Int {
        isRestricted(axis, for: subject) ? 1 : size(of: axis)
    }

    /// How many requests the space holds (`Int.max` when that overflows).
    var count: Int {
        let axes = self.axes.dropFirst()
        var total = 0
        for subject in subjects {
            var product = 1
            for axis in axes {
                let (next, overflow) = product.multipliedReportingOverflow(by: size(of: axis, for: subject))
                product = overflow ? Int.max : next
            }
            let (sum, overflow) = total.addingReportingOverflow(product)
            total = overflow ? Int.max : sum
        }
        return total
    }

    /// Visits every point of the space in a fixed order: subject class first, then standing, app roles, auth ...,
    /// the last axis varying fastest.
    func forEach(_ body: (SpacePoint) throws -> Void) rethrows {
        let axes = self.axes
        var indices = [Int](repeating: 0, count: axes.count)
        for s in subjects.indices {
            let limits = axes.map { size(of: $0, for: subjects[s]) }
            for p in indices.indices { indices[p] = 0 }
            indices[0] = s
            while true {
                try body(SpacePoint(indices: indices))
                var p = indices.count - 1
                while p > 0 {
                    indices[p] += 1
                    if indices[p] < limits[p] { break }
                    indices[p] = 0
                    p -= 1
                }
                if p == 0 { break }
            }
        }
    }

    /// The position of `axis` in `SpacePoint.indices`.
    func position(of axis: Axis) -> Int {
        switch axis {
        case .subject: 0
        case .standing: 1
        case .appRoles: 2
        case .auth: 3
        case .now: 4
        case .resourceID: 5
        case .counter(let i): Axis.fixed.count + i
        case .attribute(let i): Axis.fixed.count + counters.count + i
        }
    }

    /// The index of the point's value on `axis`.
    func index(_ axis: Axis, of point: SpacePoint) -> Int { point.indices[position(of: axis)] }

    func subject(_ point: SpacePoint) -> SubjectClass { subjects[index(.subject, of: point)] }
    func standing(_ point: SpacePoint) -> Standing { standings[index(.standing, of: point)] }
    func appRoles(_ point: SpacePoint) -> [String] { appRoleSets[index(.appRoles, of: point)] }
    /// The auth value, `.none` for a subject that is not signed in (it takes the axis's first value).
    func auth(_ point: SpacePoint) -> AuthCandidate {
        subject(point).isSignedIn ? auths[index(.auth, of: point)] : .none
    }
    func now(_ point: SpacePoint) -> Date { Date(timeIntervalSince1970: nows[index(.now, of: point)]) }
    func resourceID(_ point: SpacePoint) -> String? { resourceIDs[index(.resourceID, of: point)] }
}
