import Foundation

extension Request {
    /// Reads a request from its JSON value tree, rejecting unknown fields and wrong types by name.
    public init(value: Value) throws(RequestError) {
        let r = FieldReader(value, path: "")
        let object = try r.object()
        try r.rejectUnknown(in: object, allowed: ["subject", "action", "resource", "context"])
        let subject = try object["subject"].map { v throws(RequestError) in try Subject(value: v, path: "subject") } ?? Subject()
        guard let actionValue = object["action"] else { throw RequestError(field: "action", "is required", kind: .missingField) }
        let action = try FieldReader(actionValue, path: "action").string()
        guard let resourceValue = object["resource"] else { throw RequestError(field: "resource", "is required", kind: .missingField) }
        let resource = try Resource(value: resourceValue, path: "resource")
        let context = try object["context"].map { v throws(RequestError) in try Context(value: v, path: "context") } ?? Context()
        self.init(subject: subject, action: action, resource: resource, context: context)
    }

    /// The contract's JSON form of this request.
    public var json: JSONText {
        var fields: [JSONText.Field] = []
        var s: [JSONText.Field] = []
        if let id = subject.id { s.append(.init("id", .string(id))) }
        if let tier = subject.tier { s.append(.init("tier", .string(tier))) }
        if let e = subject.subscriptionExpiry { s.append(.init("subscriptionExpiry", .string(Timestamp.format(e)))) }
        if !subject.roles.isEmpty { s.append(.init("roles", .array(subject.roles.map { .string($0) }))) }
        if let auth = subject.auth {
            var a: [JSONText.Field] = [.init("method", .string(auth.method))]
            if let at = auth.verifiedAt { a.append(.init("verifiedAt", .string(Timestamp.format(at)))) }
            s.append(.init("auth", .object(a)))
        }
        if !subject.attributes.isEmpty { s.append(.init("attributes", JSONText(.map(subject.attributes)))) }
        fields.append(.init("subject", .object(s)))
        fields.append(.init("action", .string(action)))
        var r: [JSONText.Field] = [.init("type", .string(resource.type))]
        if let id = resource.id { r.append(.init("id", .string(id))) }
        if let owner = resource.ownerId { r.append(.init("ownerId", .string(owner))) }
        if !resource.members.isEmpty {
            r.append(.init("members", .object(resource.members.keys.sorted().map { .init($0, .string(resource.members[$0]!)) })))
        }
        if !resource.usage.isEmpty {
            r.append(.init("usage", .object(resource.usage.keys.sorted().map { .init($0, .int(resource.usage[$0]!)) })))
        }
        if !resource.attributes.isEmpty { r.append(.init("attributes", JSONText(.map(resource.attributes)))) }
        fields.append(.init("resource", .object(r)))
        var c: [JSONText.Field] = []
        if let now = context.now { c.append(.init("now", .string(Timestamp.format(now)))) }
        if !context.attributes.isEmpty { c.append(.init("attributes", JSONText(.map(context.attributes)))) }
        if !c.isEmpty { fields.append(.init("context", .object(c))) }
        return .object(fields)
    }
}

extension Subject {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["id", "tier", "subscriptionExpiry", "roles", "auth", "attributes"])
        self.init()
        id = try r.optionalString(o, "id")
        tier = try r.optionalString(o, "tier")
        subscriptionExpiry = try r.optionalTimestamp(o, "subscriptionExpiry")
        if let roles = o["roles"], roles != .null {
            self.roles = try FieldReader(roles, path: r.join("roles")).stringList()
        }
        if let auth = o["auth"], auth != .null {
            let a = FieldReader(auth, path: r.join("auth"))
            let ao = try a.object()
            try a.rejectUnknown(in: ao, allowed: ["method", "verifiedAt"])
            guard let method = try a.optionalString(ao, "method") else {
                throw RequestError(field: a.join("method"), "is required when auth is given", kind: .missingField)
            }
            self.auth = Authentication(method: method, verifiedAt: try a.optionalTimestamp(ao, "verifiedAt"))
        }
        attributes = try r.optionalMap(o, "attributes")
    }
}

extension Resource {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["type", "id", "ownerId", "members", "usage", "attributes"])
        guard let type = try r.optionalString(o, "type") else { throw RequestError(field: r.join("type"), "is required", kind: .missingField) }
        self.init(type: type)
        id = try r.optionalString(o, "id")
        ownerId = try r.optionalString(o, "ownerId")
        if let members = o["members"], members != .null {
            let m = FieldReader(members, path: r.join("members"))
            for (user, role) in try m.object() {
                self.members[user] = try FieldReader(role, path: m.join(user)).string()
            }
        }
        if let usage = o["usage"], usage != .null {
            let u = FieldReader(usage, path: r.join("usage"))
            for (counter, count) in try u.object() {
                let value = try FieldReader(count, path: u.join(counter)).integer()
                guard value >= 0 else {
                    throw RequestError(field: u.join(counter), "a usage count cannot be negative, found \(value)", kind: .negativeCount)
                }
                self.usage[counter] = value
            }
        }
        attributes = try r.optionalMap(o, "attributes")
    }
}

extension Context {
    init(value: Value, path: String) throws(RequestError) {
        let r = FieldReader(value, path: path)
        let o = try r.object()
        try r.rejectUnknown(in: o, allowed: ["now", "attributes"])
        self.init(now: try r.optionalTimestamp(o, "now"), attributes: try r.optionalMap(o, "attributes"))
    }
}
