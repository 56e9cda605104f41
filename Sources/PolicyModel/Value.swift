/// An attribute value as it arrives in a request: the JSON data model.
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case list([Value])
    case map([String: Value])

    /// The JSON name of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .list: "list"
        case .map: "map"
        }
    }
}
