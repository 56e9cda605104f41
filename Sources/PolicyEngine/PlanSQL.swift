import PolicyModel

/// Where a resource's fields live in the caller's table, for `ResourcePlan.sqlWhere(_:)`.
///
/// Column names and the member-role expression are the caller's SQL, written into the clause as given (never a
/// value from a request or a policy); every value (the subject's id, roles, literals) is a bind parameter.
public struct PlanColumns: Sendable, Hashable {
    /// The column holding the resource's id (`resource.id`).
    public var id: String?
    /// The column holding the owner's user id (`resource.ownerId`).
    public var ownerId: String?
    /// Attribute name to column (`resource.attributes.NAME`, and an owner attribute).
    public var attributes: [String: String]
    /// Usage counter to column (`resource.usage.NAME`); NULL counts as 0.
    public var usage: [String: String]
    /// An SQL expression giving the role of the member whose user id is its one `?`, NULL for a non-member,
    /// e.g. `(SELECT role FROM members m WHERE m.space_id = spaces.id AND m.user_id = ?)`.
    public var memberRole: String?
    /// An SQL expression giving the usage counter whose name is its one `?`, NULL when the resource has none, for the
    /// counters `usage` does not map, e.g. `(SELECT value FROM counters c WHERE c.doc_id = docs.id AND c.name = ?)`.
    public var usageCounter: String?
    /// An SQL expression giving how many members the resource has (`size(resource.members)`).
    public var memberCount: String?
    /// Whether an attribute with no column is absent on every row, as `decide` sees an attribute a resource does
    /// not have: SQL NULL, so a condition reading it counts as an error (`has()` is false). False: a plan that
    /// reads such an attribute fails to translate, naming it.
    public var unmappedAttributesAreAbsent: Bool
    /// Users whose role on the row the query already holds in a column (a membership row joined for that user), user
    /// id to that SQL expression, with no placeholder: read instead of `memberRole` for them (the store's list walks
    /// the user's own memberships this way, without probing `membership` again per row).
    package var knownMemberRoles: [String: String] = [:]

    /// A mapping; an absent entry makes a plan that needs it fail to translate, naming the field.
    public init(
        id: String? = nil, ownerId: String? = nil, attributes: [String: String] = [:], usage: [String: String] = [:], memberRole: String? = nil,
        usageCounter: String? = nil, memberCount: String? = nil, unmappedAttributesAreAbsent: Bool = false
    ) {
        self.id = id
        self.ownerId = ownerId
        self.attributes = attributes
        self.usage = usage
        self.memberRole = memberRole
        self.usageCounter = usageCounter
        self.memberCount = memberCount
        self.unmappedAttributesAreAbsent = unmappedAttributesAreAbsent
    }
}

/// How a clause writes its placeholders: the one place the SQL dialects differ for `sqlWhere`.
public enum SQLPlaceholders: Sendable, Hashable {
    /// `?` for every value (SQLite, MySQL, JDBC).
    case questionMarks
    /// `$n`, numbered from `first` (PostgreSQL): a clause joined after `first - 1` values of the caller's own.
    case numbered(first: Int)

    /// The placeholder of the value bound after `earlier` values of this clause.
    public func mark(after earlier: Int) -> String {
        switch self {
        case .questionMarks: "?"
        case .numbered(let first): "$\(first + earlier)"
        }
    }
}

/// A parameterised `WHERE` clause: `sql` with `?` placeholders, and the values to bind to them in order.
public struct SQLWhere: Sendable, Hashable {
    /// The clause, with `?` for each value.
    public var sql: String
    /// The values, in the order of the placeholders.
    public var bindings: [SQLValue]

    /// A clause from its parts.
    public init(sql: String, bindings: [SQLValue]) {
        self.sql = sql
        self.bindings = bindings
    }
}

/// A value bound to a placeholder.
public enum SQLValue: Sendable, Hashable {
    /// A string.
    case text(String)
    /// An integer.
    case int(Int)
    /// Numbers with a fraction, and timestamps and durations as seconds (since 1970 for a timestamp).
    case double(Double)
    /// A boolean.
    case bool(Bool)
}

/// A plan the mapping cannot express, naming the field or construct.
public struct PlanSQLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The resource field with no column (`resource.attributes.region`, `resource.members`), or the construct.
    public var field: String
    /// What is missing or has no SQL form.
    public var message: String
    public var description: String { "\(field): \(message)" }
}

extension ResourcePlan {
    /// The plan as a `WHERE` clause over the caller's table: `TRUE` for `always`, `FALSE` for `never`; placeholders
    /// as `placeholders` writes them (`?` unless told).
    ///
    /// SQL's NULL stands for what `decide` counts as an error (an absent attribute): a deny rule whose condition
    /// is NULL keeps the row out, as `decide` denies; a requirement or allow rule whose condition is NULL lets
    /// nothing in. Type mismatches that `decide` treats as errors are the database's to compare.
    public func sqlWhere(_ columns: PlanColumns, placeholders: SQLPlaceholders = .questionMarks) throws(PlanSQLError) -> SQLWhere {
        var writer = SQLWriter(columns: columns, placeholders: placeholders)
        switch self {
        case .always: return SQLWhere(sql: "TRUE", bindings: [])
        case .never: return SQLWhere(sql: "FALSE", bindings: [])
        case .conditional(let expression):
            let sql = try writer.write(expression)
            return SQLWhere(sql: sql, bindings: writer.bindings)
        }
    }
}

private struct SQLWriter {
    let columns: PlanColumns
    let placeholders: SQLPlaceholders
    var bindings: [SQLValue] = []

    mutating func bind(_ value: SQLValue) -> String {
        bindings.append(value)
        return placeholders.mark(after: bindings.count - 1)
    }

    mutating func write(_ expression: PlanExpression) throws(PlanSQLError) -> String {
        switch expression {
        case .ownerIsSubject(let subject, let field):
            let column: String
            if let name = field.attribute { column = try attribute(name) } else { column = try owner() }
            return "(\(column) = \(bind(.text(subject))))"
        case .memberRole(let subject, let roles):
            // No role grants the action: nothing to bind (a value without its placeholder would shift every later one).
            if roles?.isEmpty == true { return "FALSE" }
            let expression = try memberRole(of: subject)
            guard let roles else { return "(\(expression) IS NOT NULL)" }
            var marks: [String] = []
            for role in roles { marks.append(bind(.text(role))) }
            return "(\(expression) IN (\(marks.joined(separator: ", "))))"
        case .usageBelow(let counter, let limit):
            return "(COALESCE(\(try usage(counter)), 0) < \(bind(.int(limit))))"
        case .condition(let condition):
            return try write(condition.node, source: condition.source)
        case .and(let parts):
            if parts.isEmpty { return "TRUE" }
            var written: [String] = []
            for part in parts { written.append(try write(part)) }
            return "(" + written.joined(separator: " AND ") + ")"
        case .or(let parts):
            if parts.isEmpty { return "FALSE" }
            var written: [String] = []
            for part in parts { written.append(try write(part)) }
            return "(" + written.joined(separator: " OR ") + ")"
        case .not(let part):
            return "(NOT \(try write(part)))"
        }
    }

    private func owner() throws(PlanSQLError) -> String {
        guard let column = columns.ownerId else { throw PlanSQLError(field: "resource.ownerId", message: "no column given") }
        return column
    }

    private func attribute(_ name: String) throws(PlanSQLError) -> String {
        guard let column = columns.attributes[name] else { throw PlanSQLError(field: "resource.attributes.\(name)", message: "no column given") }
        return column
    }

    private mutating func usage(_ name: String) throws(PlanSQLError) -> String {
        if let column = columns.usage[name] { return column }
        guard let counter = columns.usageCounter else { throw PlanSQLError(field: "resource.usage.\(name)", message: "no column given") }
        return Self.filling(counter, with: bind(.text(name)))
    }

    /// The member-role expression for `user`, the user's id bound.
    private mutating func memberRole(of user: String) throws(PlanSQLError) -> String {
        if let known = columns.knownMemberRoles[user] { return known }
        guard let role = columns.memberRole else { throw PlanSQLError(field: "resource.members", message: "no member-role expression given") }
        return Self.filling(role, with: bind(.text(user)))
    }

    /// `template` with every `?` in it replaced by `placeholder`: Foundation's `replacingOccurrences` did the same
    /// through NSString, once for each page of a resource list (about 4% of the server's CPU listing 1,000 ids a page).
    private static func filling(_ template: String, with placeholder: String) -> String {
        template.split(separator: "?", omittingEmptySubsequences: false).joined(separator: placeholder)
    }

    /// Whether the node is an error on every row, as `decide` finds it: it reads an attribute no row has (when the
    /// columns say unmapped attributes are absent) through operators that fail on an error, or it reads no resource
    /// field and is not a constant (its subject and context parts failed when the plan was made).
    private func isError(_ node: ConditionNode) -> Bool {
        if !node.readsResource {
            if case .constant = node { return false }
            return true
        }
        switch node {
        case .attribute(.resource, let name, _): return columns.unmappedAttributesAreAbsent && columns.attributes[name] == nil
        case .compare(_, let a, let b), .add(let a, let b), .subtract(let a, let b), .contains(let a, let b), .index(let a, let b),
            .stringTest(_, let a, let b):
            return isError(a) || isError(b)
        case .not(let a), .negate(let a), .size(let a), .inStrings(let a, _), .inValues(let a, _): return isError(a)
        case .inItems(let a, let items): return isError(a) || items.contains { isError($0) }
        case .list(let items): return items.contains { isError($0) }
        default: return false
        }
    }

    private mutating func write(_ node: ConditionNode, source: String) throws(PlanSQLError) -> String {
        // SQL's NULL is the error: AND, OR and NOT then treat it as CEL's commutative operators do.
        if isError(node) { return "NULL" }
        switch node {
        case .constant(.bool(let b)): return b ? "TRUE" : "FALSE"
        case .and(let a, let b): return "(\(try write(a, source: source)) AND \(try write(b, source: source)))"
        case .or(let a, let b): return "(\(try write(a, source: source)) OR \(try write(b, source: source)))"
        case .not(let a): return "(NOT \(try write(a, source: source)))"
        case .compare(let op, let a, let b):
            let sqlOperator = op == .equal ? "=" : op == .notEqual ? "<>" : op.rawValue
            return "(\(try value(a, source: source)) \(sqlOperator) \(try value(b, source: source)))"
        case .inStrings(let element, let strings):
            if strings.isEmpty { return "FALSE" }
            let left = try value(element, source: source)
            var marks: [String] = []
            for string in strings.sorted() { marks.append(bind(.text(string))) }
            return "(\(left) IN (\(marks.joined(separator: ", "))))"
        case .has(.attribute(.resource, let name)):
            if columns.unmappedAttributesAreAbsent && columns.attributes[name] == nil { return "FALSE" }
            return "(\(try attribute(name)) IS NOT NULL)"
        case .contains(element: .constant(.string(let user)), container: .field(.resourceMembers)):
            return "(\(try memberRole(of: user)) IS NOT NULL)"
        case .has(.field(.resourceId)):
            guard let id = columns.id else { throw PlanSQLError(field: "resource.id", message: "no column given") }
            return "(\(id) IS NOT NULL)"
        case .has(.field(.resourceOwnerId)): return "(\(try owner()) IS NOT NULL)"
        case .has(.usage(let name)): return "(\(try usage(name)) IS NOT NULL)"
        default:
            throw PlanSQLError(field: source, message: "this condition has no SQL form (comparisons, `in` lists, has(), and, or, not only)")
        }
    }

    private mutating func value(_ node: ConditionNode, source: String) throws(PlanSQLError) -> String {
        if isError(node) { return "NULL" }
        switch node {
        case .index(.field(.resourceMembers), .constant(.string(let user))): return try memberRole(of: user)
        case .size(.field(.resourceMembers)):
            guard let count = columns.memberCount else { throw PlanSQLError(field: "resource.members", message: "no member-count expression given") }
            return count
        case .attribute(.resource, let name, _): return try attribute(name)
        case .usage(let name): return "COALESCE(\(try usage(name)), 0)"
        case .field(.resourceOwnerId): return try owner()
        case .field(.resourceId):
            guard let id = columns.id else { throw PlanSQLError(field: "resource.id", message: "no column given") }
            return id
        case .constant(let value):
            switch value {
            case .bool(let b): return bind(.bool(b))
            case .int(let i): return bind(.int(i))
            case .double(let d), .timestamp(let d), .duration(let d): return bind(.double(d))
            case .string(let s): return bind(.text(s))
            default: break
            }
        default: break
        }
        throw PlanSQLError(field: source, message: "this operand has no SQL form (resource attributes, usage, id, ownerId and literals only)")
    }
}
