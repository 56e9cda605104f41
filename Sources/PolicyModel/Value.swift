/// An attribute value as it arrives in a request: the JSON data model.
public enum Value: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without a fraction that fits `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    /// A string (timestamps and durations arrive as strings).
    case string(String)
    /// An array.
    case list([Value])
    /// An object.
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
