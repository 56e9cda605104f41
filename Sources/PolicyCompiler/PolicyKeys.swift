import PolicyModel

/// The keys each mapping of a policy file may hold, and the shape of each key's value: the one statement of the
/// file format. `DecodePass` refuses a key that is not in its table, and `PolicySchema` writes the JSON Schema
/// that editors use from the same tables, so the two cannot drift (a test compares `schemas/` with the output).
package enum PolicyKeys {
    /// The shape of a value, as the decoder reads it (`NodeReader`).
    package indirect enum Shape: Sendable {
        /// Any scalar read as text (`name: Free`, `price: 4.99`).
        case text
        /// A non-empty scalar naming something.
        case name
        /// A name, or a list of names (one name is a list of one).
        case names
        /// `true` or `false`.
        case bool
        /// An integer, at least `minimum` when given.
        case integer(minimum: Int?)
        /// A duration such as `5m`, `1h30m` (`DurationText`).
        case duration
        /// A condition in the expression language, or `true`/`false`.
        case condition
        /// One of fixed words.
        case oneOf([String])
        /// A list of names, or `"*"` for all.
        case namesOrAll
        /// A mapping with these keys.
        case object(Table)
        /// A mapping from declared names to values of this shape (a name with no body, `name:`, is allowed).
        case named(Shape)
        /// A mapping from any key to this shape.
        case map(Shape)
        /// A list of this shape.
        case list(Shape)
        /// Either of two shapes.
        case either(Shape, Shape)
        /// Text matching a regular expression (attribute type names such as `list<string>`).
        case matching(String)
        /// Anything (a request, checked by the request reader).
        case any
    }

    /// One kind of mapping: its keys in the order the docs list them, and which of them are required.
    package struct Table: Sendable {
        /// The schema's name for it (`$defs/<id>`).
        package var id: String
        /// What the mapping is, as the schema's title says it.
        package var title: String
        package var fields: [(key: String, shape: Shape)]
        package var required: [String] = []
        /// The keys alone, as `rejectUnknownKeys` takes them.
        package var keys: [String] { fields.map(\.key) }

        package init(_ id: String, _ title: String, _ fields: [(key: String, shape: Shape)], required: [String] = []) {
            self.id = id
            self.title = title
            self.fields = fields
            self.required = required
        }
    }

    /// Reasons a message may be written for (`messages:` at any level).
    static let messages = Shape.map(.text)

    package static let tier = Table(
        "tier", "A tier", [("name", .text), ("price", .text), ("default", .bool), ("products", .names)])
    package static let feature = Table(
        "feature", "A feature gate", [("name", .text), ("tiers", .names), ("upgradeTo", .name)], required: ["tiers"])
    package static let limit = Table(
        "limit", "A numeric limit", [("name", .text), ("counter", .name), ("tiers", .map(.integer(minimum: 0))), ("upgradeTo", .name)],
        required: ["tiers"])
    package static let appRole = Table(
        "appRole", "An app role", [("name", .text)])
    package static let enumeration = Table(
        "enumeration", "An enumerated attribute type", [("enum", .names)], required: ["enum"])
    /// `bool`, `int`, `double`, `string`, `timestamp`, `duration`, `list<...>` of those, or `{enum: [...]}`.
    package static let attributeType = Shape.either(
        .matching("^(list<)*(bool|int|double|string|timestamp|duration)(>)*$"), .object(enumeration))
    package static let attributes = Table(
        "attributes", "Attribute types by scope", AttributeScope.allCases.map { ($0.rawValue, Shape.named(attributeType)) })
    package static let role = Table(
        "role", "A resource role", [("inherits", .names), ("grants", .names)])
    package static let action = Table(
        "action", "An action", requirementKeys + [("messages", messages), ("description", .text)])
    package static let resource = Table(
        "resource", "A resource type",
        [
            ("owner", .name), ("ownerRole", .name), ("memberActions", .names), ("roles", .named(.object(role))),
            ("actions", .named(.object(action))), ("messages", messages),
        ],
        required: ["actions"])
    package static let rule = Table(
        "rule", "An allow or deny rule",
        [
            ("name", .text), ("effect", .oneOf(["allow", "deny"])), ("resources", .namesOrAll), ("actions", .namesOrAll),
            ("when", .condition), ("message", .text),
        ],
        required: ["effect", "actions"])
    package static let expect = Table(
        "expect", "The expected decision",
        [
            ("decision", .oneOf(["allow", "deny"])), ("reason", .oneOf(Reason.allCases.map(\.rawValue))), ("message", .text),
            ("upgradeTo", .name), ("limit", .integer(minimum: nil)), ("used", .integer(minimum: nil)),
            ("remaining", .integer(minimum: nil)),
        ])
    package static let test = Table(
        "test", "A policy test", [("name", .text), ("request", .any), ("expect", .object(expect))], required: ["request", "expect"])
    package static let invariantSelector = Table(
        "invariantSelector", "Which requests an invariant covers",
        ["resource", "action", "subject", "tier", "role", "appRole", "withoutAppRole", "auth", "feature", "limit"].map { ($0, Shape.names) })
    package static let invariant = Table(
        "invariant", "An invariant",
        [
            ("name", .text), ("when", .object(invariantSelector)),
            ("expect", .oneOf(InvariantExpectation.allCases.map(\.rawValue))), ("reason", .names),
        ],
        required: ["expect"])
    /// A policy file: any of the sections, in any file of the set.
    package static let file = Table(
        "file", "A Gatehouse policy file",
        [
            ("tiers", .named(.object(tier))), ("features", .named(.object(feature))), ("limits", .named(.object(limit))),
            ("appRoles", .either(.list(.name), .named(.object(appRole)))), ("attributes", .object(attributes)),
            ("resources", .named(.object(resource))), ("rules", .list(.object(rule))), ("messages", messages),
            ("tests", .list(.object(test))), ("invariants", .list(.object(invariant))),
        ])
}
