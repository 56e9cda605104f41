import Foundation

/// JSON to write, with object keys kept in the order given (the contract's field order).
public indirect enum JSONText: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer.
    case int(Int)
    /// A number with a fraction.
    case double(Double)
    /// A string, escaped when written.
    case string(String)
    /// An array.
    case array([JSONText])
    /// An object, its keys in the order given.
    case object([Field])

    /// One key and value of an object.
    public struct Field: Sendable, Hashable {
        /// The key.
        public var key: String
        /// The value.
        public var value: JSONText
        /// A field from its key and value.
        public init(_ key: String, _ value: JSONText) {
            self.key = key
            self.value = value
        }
    }

    /// Compact single-line JSON (for JSON Lines) or two-space indented JSON.
    public func rendered(pretty: Bool = false) -> String {
        var out = ""
        write(into: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(into out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite, d == d.rounded(), abs(d) < 1e15 { out += String(Int(d)) + ".0" } else if d.isFinite { out += "\(d)" } else { out += "null" }
        case .string(let s): JSONText.writeString(s, into: &out)
        case .array(let items):
            Self.writeContainer(items, open: "[", close: "]", into: &out, pretty: pretty, indent: indent) { item, out in
                item.write(into: &out, pretty: pretty, indent: indent + 1)
            }
        case .object(let fields):
            Self.writeContainer(fields, open: "{", close: "}", into: &out, pretty: pretty, indent: indent) { field, out in
                JSONText.writeString(field.key, into: &out)
                out += pretty ? ": " : ":"
                field.value.write(into: &out, pretty: pretty, indent: indent + 1)
            }
        }
    }

    /// An array or object: `open`, the elements separated by commas (each on its own indented line when pretty),
    /// `close`; `[]` or `{}` when empty.
    private static func writeContainer<Element>(
        _ elements: [Element], open: String, close: String, into out: inout String, pretty: Bool, indent: Int,
        _ writeElement: (Element, inout String) -> Void
    ) {
        if elements.isEmpty { out += open + close; return }
        out += open
        for (i, element) in elements.enumerated() {
            if i > 0 { out += "," }
            if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
            writeElement(element, &out)
        }
        if pretty { out += "\n" + String(repeating: "  ", count: indent) }
        out += close
    }

    private static func writeString(_ s: String, into out: inout String) {
        out += "\""
        // Most strings need no escape: appended whole, not a scalar at a time (a decision record's facts are
        // rendered on the recorder's path; the scalar loop was a third of the writer's instructions).
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(c.value, radix: 16).count) + String(c.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSONText {
    /// The JSON form of a request attribute value.
    public init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .list(let items): self = .array(items.map(JSONText.init))
        case .map(let m): self = .object(m.keys.sorted().map { Field($0, JSONText(m[$0]!)) })
        }
    }
}

extension Decision {
    /// The contract's decision object, fields in contract order, absent fields left out.
    public var json: JSONText {
        var fields: [JSONText.Field] = [
            .init("decision", .string(effect.rawValue)),
            .init("reason", .string(reason.rawValue)),
        ]
        if let message { fields.append(.init("message", .string(message))) }
        if let limit { fields.append(.init("limit", .int(limit))) }
        if let used { fields.append(.init("used", .int(used))) }
        if let remaining { fields.append(.init("remaining", .int(remaining))) }
        if let upgradeTo { fields.append(.init("upgradeTo", .string(upgradeTo))) }
        if let policy { fields.append(.init("policy", .string(policy.description))) }
        return .object(fields)
    }
}
