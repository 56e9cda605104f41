import Foundation

/// Writes a request as the contract's compact JSON into a byte buffer: the decision-log writer's form of a record's
/// facts, without building a `JSONText` tree first (that tree and its rendering were a fifth of what recording a
/// decision cost, docs/performance.md "Recording decisions").
///
/// The bytes are exactly `request.json.rendered()`'s (tested), with every user id (the subject's, the owner's and
/// the members') passed through `userId` first, as `DecisionPseudonyms.pseudonymised(_:)` and then `json` would
/// write them.
public enum RequestWriter {
    /// Appends `request` as compact JSON, each user id replaced by `userId(id)`.
    public static func append(_ request: Request, userId: (String) -> String = { $0 }, to out: inout [UInt8]) {
        let subject = request.subject
        literal("{\"subject\":{", &out)
        var first = true
        func key(_ name: StaticString) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            literal(name, &out)
            literal("\":", &out)
        }
        if let id = subject.id {
            key("id")
            DecisionWriter.appendString(id.isEmpty ? id : userId(id), to: &out)
        }
        if let tier = subject.tier {
            key("tier")
            DecisionWriter.appendString(tier, to: &out)
        }
        if let expiry = subject.subscriptionExpiry {
            key("subscriptionExpiry")
            appendTimestamp(expiry, to: &out)
        }
        if !subject.roles.isEmpty {
            key("roles")
            out.append(UInt8(ascii: "["))
            for (i, role) in subject.roles.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                DecisionWriter.appendString(role, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        if let auth = subject.auth {
            key("auth")
            literal("{\"method\":", &out)
            DecisionWriter.appendString(auth.method, to: &out)
            if let at = auth.verifiedAt {
                literal(",\"verifiedAt\":", &out)
                appendTimestamp(at, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        if !subject.attributes.isEmpty {
            key("attributes")
            appendMap(subject.attributes, to: &out)
        }
        literal("},\"action\":", &out)
        DecisionWriter.appendString(request.action, to: &out)

        let resource = request.resource
        literal(",\"resource\":{\"type\":", &out)
        DecisionWriter.appendString(resource.type, to: &out)
        if let id = resource.id {
            literal(",\"id\":", &out)
            DecisionWriter.appendString(id, to: &out)
        }
        if let owner = resource.ownerId {
            literal(",\"ownerId\":", &out)
            DecisionWriter.appendString(owner.isEmpty ? owner : userId(owner), to: &out)
        }
        if !resource.members.isEmpty {
            literal(",\"members\":{", &out)
            // Renamed first, then sorted by the new names; two ids with one name keep the first's role, as the
            // pseudonymised request's dictionary does.
            var renamed: [(key: String, role: String)] = []
            renamed.reserveCapacity(resource.members.count)
            var seen = Set<String>()
            for (member, role) in resource.members {
                let name = userId(member)
                if seen.insert(name).inserted { renamed.append((name, role)) }
            }
            renamed.sort { $0.key < $1.key }
            for (i, member) in renamed.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                DecisionWriter.appendString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                DecisionWriter.appendString(member.role, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        if !resource.usage.isEmpty {
            literal(",\"usage\":{", &out)
            for (i, name) in resource.usage.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                DecisionWriter.appendString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                DecisionWriter.appendInteger(resource.usage[name]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        if !resource.attributes.isEmpty {
            literal(",\"attributes\":", &out)
            appendMap(resource.attributes, to: &out)
        }
        out.append(UInt8(ascii: "}"))

        let context = request.context
        if context.now != nil || !context.attributes.isEmpty {
            literal(",\"context\":{", &out)
            if let now = context.now {
                literal("\"now\":", &out)
                appendTimestamp(now, to: &out)
            }
            if !context.attributes.isEmpty {
                if context.now != nil { out.append(UInt8(ascii: ",")) }
                literal("\"attributes\":", &out)
                appendMap(context.attributes, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `request` as compact JSON text, each user id replaced by `userId(id)`.
    public static func text(_ request: Request, userId: (String) -> String = { $0 }) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(384)
        append(request, userId: userId, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A time as a JSON string: `Timestamp`'s text needs no escaping.
    private static func appendTimestamp(_ date: Date, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        Timestamp.append(date, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private static func literal(_ text: StaticString, _ out: inout [UInt8]) {
        DecisionWriter.append(literal: text, to: &out)
    }

    /// A map of attribute values, keys sorted, as `JSONText(.map(...))` writes it.
    private static func appendMap(_ map: [String: Value], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, name) in map.keys.sorted().enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            DecisionWriter.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            appendValue(map[name]!, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// One attribute value, as `JSONText(value)` writes it.
    private static func appendValue(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: literal("null", &out)
        case .bool(let b): b ? literal("true", &out) : literal("false", &out)
        case .int(let i): DecisionWriter.appendInteger(i, to: &out)
        case .string(let s): DecisionWriter.appendString(s, to: &out)
        case .double: out.append(contentsOf: JSONText(value).rendered().utf8)
        case .list(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .map(let m): appendMap(m, to: &out)
        }
    }
}
