import Foundation
import PolicyEngine
import PolicyModel

extension ActionSpace {
    /// The concrete request at a point.
    func request(_ point: SpacePoint) -> Request {
        let now = now(point)
        var subject = Subject()
        let subjectID: String?
        switch self.subject(point) {
        case .signedOut:
            subjectID = nil
        case .anonymous:
            subjectID = "u-anon"
            subject.auth = Authentication(method: AuthMethod.anonymous, verifiedAt: now)
        case .tier(let tier, let expiry):
            subjectID = "u-subject"
            subject.tier = tier
            subject.subscriptionExpiry = expiry?.date(now: now)
            switch auth(point) {
            case .none: break
            case .method(let method, let verified): subject.auth = Authentication(method: method, verifiedAt: verified?.date(now: now))
            }
        }
        subject.id = subjectID
        subject.roles = appRoles(point)
        var resource = Resource(type: type, id: resourceID(point))
        for (i, counter) in counters.enumerated() {
            if let value = counter.values[index(.counter(i), of: point)] { resource.usage[counter.name] = value }
        }
        var context = Context(now: now)
        for (i, attribute) in attributes.enumerated() {
            let value: Value?
            switch attribute.values[index(.attribute(i), of: point)] {
            case .absent: value = nil
            case .value(let v): value = v
            case .time(let t): value = .string(Timestamp.format(t.date(now: now)))
            }
            guard let value else { continue }
            switch attribute.owner {
            case .subject: subject.attributes[attribute.name] = value
            case .resource: resource.attributes[attribute.name] = value
            case .context: context.attributes[attribute.name] = value
            }
        }
        // Standing last: it decides the owner field, whatever an attribute axis put there.
        let owner = RequestSpace.otherUser
        switch standing(point) {
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
}
