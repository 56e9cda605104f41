import Foundation
import PolicyEngine
import PolicyModel

/// One axis of an `ActionSpace`, by name. The six fixed axes come first, in this order, then one axis per
/// usage counter and one per attribute the action's conditions read.
///
/// Positions (`SpacePoint.indices`) follow `ActionSpace.axes`; code that names an axis uses this enum, and only
/// code that treats every axis alike (covers, products) works with positions.
enum Axis: Hashable {
    /// Who asks: signed out, anonymous, or a tier (`ActionSpace.subjects`).
    case subject
    /// The subject's standing on the resource (`standings`).
    case standing
    /// The app roles the subject holds (`appRoleSets`).
    case appRoles
    /// How and when the subject was verified (`auths`).
    case auth
    /// `context.now` (`nows`).
    case now
    /// `resource.id` (`resourceIDs`).
    case resourceID
    /// `resource.usage` of `counters[i]`.
    case counter(Int)
    /// The attribute `attributes[i]`.
    case attribute(Int)

    /// The fixed axes, in position order.
    static let fixed: [Axis] = [.subject, .standing, .appRoles, .auth, .now, .resourceID]
    /// The axes that say who asks: they come first, and the matrix makes its rows of them.
    static let asker: [Axis] = [.subject, .standing, .appRoles, .auth]
}

/// One request of an `ActionSpace`: a value index per axis, in `ActionSpace.axes` order.
struct SpacePoint: Hashable {
    var indices: [Int]
}

/// Who is asking, as the space varies it.
enum SubjectClass: Hashable {
    case signedOut
    case anonymous
    /// Signed in holding `tier`; `expiry` nil means no expiry date.
    case tier(String, expiry: TimeCandidate?)

    var isSignedIn: Bool {
        if case .tier = self { return true }
        return false
    }

    /// Whether the subscription has lapsed at `now`, as `decide` judges it.
    func isExpired(now: Date) -> Bool {
        guard case .tier(_, let expiry?) = self else { return false }
        return Subject.subscriptionHasLapsed(expiry: expiry.date(now: now), at: now)
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
