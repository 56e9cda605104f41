import Foundation
import PolicyEngine
import PolicyModel

extension ActionSpace {
    /// The name of an axis, as reports and invariants say it.
    func name(of axis: Axis) -> String {
        switch axis {
        case .subject: "subject"
        case .standing: "role"
        case .appRoles: "appRoles"
        case .auth: "auth"
        case .now: "now"
        case .resourceID: "resource.id"
        case .counter(let i): "usage.\(counters[i].name)"
        case .attribute(let i): "\(attributes[i].owner.rawValue).attributes.\(attributes[i].name)"
        }
    }

    /// A value of an axis as a reader sees it: "pro (expired)", "editor", "pin verified 5 minutes ago", "49".
    func label(_ axis: Axis, value: Int) -> String {
        let now = Date(timeIntervalSince1970: nows[0])
        switch axis {
        case .subject: return label(subjects[value], now: now)
        case .standing: return standings[value].label
        case .appRoles: return appRoleSets[value].isEmpty ? "none" : appRoleSets[value].joined(separator: "+")
        case .auth: return label(auths[value])
        case .now: return Timestamp.format(Date(timeIntervalSince1970: nows[value]))
        case .resourceID: return resourceIDs[value] ?? "absent"
        case .counter(let i): return counters[i].values[value].map(String.init) ?? "absent"
        case .attribute(let i): return label(attributes[i].values[value], now: now)
        }
    }

    /// The point's value on each axis that has more than one value, for reports.
    func describe(_ point: SpacePoint) -> [(axis: String, value: String)] {
        let signedIn = subject(point).isSignedIn
        return axes.compactMap { axis in
            // The subject always; other axes when they vary; auth only for a signed-in subject (others have none).
            guard axis == .subject || size(of: axis) > 1, axis != .auth || signedIn else { return nil }
            return (name(of: axis), label(axis, value: index(axis, of: point)))
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
