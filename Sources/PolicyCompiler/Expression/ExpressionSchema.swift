import PolicyEngine

/// The declared type of an attribute in a policy's schema.
package indirect enum AttributeType: Sendable, Hashable, CustomStringConvertible {
    case bool, int, double, string, timestamp, duration
    /// A string restricted to the listed values.
    case enumeration([String])
    case list(AttributeType)

    /// "bool", "int", "double", "string", "timestamp", "duration", "list<string>" ...; nil if unknown.
    package static func parse(_ text: String) -> AttributeType? {
        guard text.utf8.count <= 256 else { return nil }
        return parse(Substring(text), depth: 0)
    }

    private static func parse(_ text: Substring, depth: Int) -> AttributeType? {
        let text = text.trimmingWhitespace()
        switch text {
        case "bool": return .bool
        case "int": return .int
        case "double": return .double
        case "string": return .string
        case "timestamp": return .timestamp
        case "duration": return .duration
        default:
            guard depth < 8, text.hasPrefix("list<"), text.hasSuffix(">") else { return nil }
            return parse(text.dropFirst(5).dropLast(), depth: depth + 1).map { .list($0) }
        }
    }

    /// For did-you-mean on a bad type name.
    package static var knownNames: [String] {
        let scalars = ["bool", "int", "double", "string", "timestamp", "duration"]
        return scalars + scalars.map { "list<\($0)>" }
    }

    package var description: String {
        switch self {
        case .enumeration(let values): "enum(\(values.joined(separator: ", ")))"
        case .list(let element): "list<\(element)>"
        // A scalar is named as the checker names its type.
        case .bool, .int, .double, .string, .timestamp, .duration: ExpressionType(self).description
        }
    }

    /// The form the engine converts request values with.
    package var conditionType: ConditionType {
        switch self {
        case .bool: .bool
        case .int: .int
        case .double: .double
        case .string: .string
        case .timestamp: .timestamp
        case .duration: .duration
        case .enumeration(let values): .enumeration(values)
        case .list(let element): .list(element.conditionType)
        }
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}

/// What a condition may refer to: declared attributes and the names of tiers, roles and resource types.
package struct ExpressionSchema: Sendable {
    package var subjectAttributes: [String: AttributeType] = [:]
    package var resourceAttributes: [String: AttributeType] = [:]
    package var contextAttributes: [String: AttributeType] = [:]
    /// Tier ids.
    package var tiers: [String] = []
    package var appRoles: [String] = []
    package var resourceTypes: [String] = []
    /// Roles of the resource type(s) the condition applies to.
    package var resourceRoles: [String] = []

    package init() {}
}
