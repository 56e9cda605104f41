import Foundation
import PolicyEngine
import PolicyModel
import PolicySyntax

/// Parses, type-checks and compiles rule conditions.
package enum ExpressionChecker {
    /// Parses, type-checks (must be bool) and compiles; all problems come back as diagnostics.
    package static func compile(
        _ text: String, origin: SourceLocation, continuationColumn: Int? = nil, schema: ExpressionSchema
    ) -> Result<CompiledCondition, ExpressionDiagnostics> {
        let expr: Expr
        switch ExpressionParser.parse(text, origin: origin, continuationColumn: continuationColumn) {
        case .failure(let diagnostics): return .failure(diagnostics)
        case .success(let parsed): expr = parsed
        }
        var checker = ExpressionTypeChecker(schema: schema)
        let checked = checker.check(expr)
        if let checked, checked.type != .bool {
            checker.diagnostics.error(
                .expressionType, "a condition must be bool, but this is \(checked.type)", at: expr.span.location, length: expr.span.length,
                help: ["compare the value with something, e.g. `... == ...` or `... > 0`"])
        }
        guard let checked, !checker.diagnostics.hasErrors else {
            return .failure(ExpressionDiagnostics(checker.diagnostics.diagnostics))
        }
        return .success(CompiledCondition(
            source: text, location: origin, root: checked.node, readPaths: checker.readPaths))
    }
}

/// The static type of a subexpression.
indirect enum ExpressionType: Hashable, CustomStringConvertible {
    case bool, int, double, string, timestamp, duration, null
    case list(ExpressionType)
    /// `resource.members`.
    case map
    /// The element type of `[]`, compatible with every type.
    case empty

    var description: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .timestamp: "timestamp"
        case .duration: "duration"
        case .null: "null"
        case .list(.empty): "list"
        case .list(let element): "list<\(element)>"
        case .map: "map<string, string>"
        case .empty: "any"
        }
    }

    var isNumeric: Bool { self == .int || self == .double }

    init(_ attribute: AttributeType) {
        switch attribute {
        case .bool: self = .bool
        case .int: self = .int
        case .double: self = .double
        case .string, .enumeration: self = .string
        case .timestamp: self = .timestamp
        case .duration: self = .duration
        case .list(let element): self = .list(ExpressionType(element))
        }
    }

    /// Whether `==` may compare values of the two types.
    func isComparable(with other: ExpressionType) -> Bool {
        switch (self, other) {
        case _ where self == other: true
        case (.empty, _), (_, .empty): true
        case _ where isNumeric && other.isNumeric: true
        case (.list(let a), .list(let b)): a.isComparable(with: b)
        default: false
        }
    }

    /// The common type of two list elements, or nil when they have none.
    func unified(with other: ExpressionType) -> ExpressionType? {
        switch (self, other) {
        case _ where self == other: self
        case (.empty, _): other
        case (_, .empty): self
        case _ where isNumeric && other.isNumeric: .double
        case (.list(let a), .list(let b)): a.unified(with: b).map { .list($0) }
        default: nil
        }
    }
}

/// The closed set of strings a value may take (tiers, roles, ...), for checking literals against it.
struct ValueDomain {
    var code: DiagnosticCode
    /// "tier", "auth method", "value".
    var noun: String
    /// Said after the value in the message: "" or " for subject.attributes.sharing".
    var owner = ""
    /// "tiers", "auth methods", "values".
    var plural: String
    var values: [String]
}

/// A checked subexpression: its compiled node, type, and what the checks around it need to know.
struct CheckedExpression {
    var node: ConditionNode
    var type: ExpressionType
    /// The domain of the value, or of its elements for a list, or of its values for a map.
    var domain: ValueDomain? = nil
}

/// One pass over a condition's syntax tree: resolves paths, checks types, folds constants, builds nodes.
///
/// Recursion follows the tree, whose depth the parser caps at `ExpressionParser.maximumDepth`.
struct ExpressionTypeChecker {
    let schema: ExpressionSchema
    var diagnostics = DiagnosticCollector()
    var readPaths: [String] = []

    init(schema: ExpressionSchema) { self.schema = schema }

    mutating func error(_ code: DiagnosticCode, _ message: String, at span: ExpressionSpan, help: [String] = []) {
        diagnostics.error(code, message, at: span.location, length: span.length, help: help)
    }

    mutating func noteRead(_ path: String) {
        if !readPaths.contains(path) { readPaths.append(path) }
    }

    // MARK: - Expressions

    mutating func check(_ expr: Expr) -> CheckedExpression? {
        switch expr {
        case .literal(let literal, _):
            switch literal {
            case .null: return CheckedExpression(node: .constant(.null), type: .null)
            case .bool(let b): return CheckedExpression(node: .constant(.bool(b)), type: .bool)
            case .int(let i): return CheckedExpression(node: .constant(.int(i)), type: .int)
            case .double(let d): return CheckedExpression(node: .constant(.double(d)), type: .double)
            case .string(let s): return CheckedExpression(node: .constant(.string(s)), type: .string)
            }
        case .list(let elements, _):
            return checkList(elements)
        case .identifier, .member:
            return checkPath(expr)?.checked
        case .index(let base, let key, let span):
            return checkIndex(base, key, span)
        case .call(let receiver, let name, let nameSpan, let arguments, let span):
            if let receiver { return checkMethod(receiver, name, nameSpan, arguments, span) }
            return checkFunction(name, nameSpan, arguments, span)
        case .unary(let op, let operand, let span):
            guard let o = check(operand) else { return nil }
            switch op {
            case .not:
                guard o.type == .bool else {
                    error(.expressionType, "'!' needs a bool, but this is \(o.type)", at: span)
                    return nil
                }
                return CheckedExpression(node: folded(.not(o.node)), type: .bool)
            case .negate:
                guard o.type == .int || o.type == .double || o.type == .duration else {
                    error(.expressionType, "'-' needs an int, double or duration, but this is \(o.type)", at: span)
                    return nil
                }
                return CheckedExpression(node: folded(.negate(o.node)), type: o.type)
            }
        case .binary(let op, let left, let right, let operatorSpan, let span):
            return checkBinary(op, left, right, operatorSpan, span)
        }
    }

    mutating func checkList(_ elements: [Expr]) -> CheckedExpression? {
        var nodes: [ConditionNode] = []
        var elementType = ExpressionType.empty
        var domain: ValueDomain?
        var failed = false
        for element in elements {
            guard let c = check(element) else {
                failed = true
                continue
            }
            guard let unified = elementType.unified(with: c.type) else {
                error(.expressionType, "list elements must share one type, but this is \(c.type) after \(elementType)", at: element.span)
                failed = true
                continue
            }
            elementType = unified
            domain = domain ?? c.domain
            nodes.append(c.node)
        }
        if failed { return nil }
        var constants: [ConditionValue] = []
        for node in nodes {
            guard case .constant(let value) = node else {
                return CheckedExpression(node: .list(nodes), type: .list(elementType), domain: domain)
            }
            constants.append(value)
        }
        return CheckedExpression(node: .constant(.list(.items(constants))), type: .list(elementType))
    }

    mutating func checkIndex(_ base: Expr, _ key: Expr, _ span: ExpressionSpan) -> CheckedExpression? {
        guard let b = check(base), let k = check(key) else { return nil }
        switch b.type {
        case .map:
            guard k.type == .string else {
                error(.expressionType, "a map<string, string> is indexed by a string, but this is \(k.type)", at: key.span)
                return nil
            }
            return CheckedExpression(node: folded(.index(b.node, k.node)), type: .string, domain: b.domain)
        case .list(let element):
            guard k.type == .int else {
                error(.expressionType, "a list is indexed by an int, but this is \(k.type)", at: key.span)
                return nil
            }
            return CheckedExpression(node: folded(.index(b.node, k.node)), type: element, domain: b.domain)
        default:
            error(.expressionType, "only lists and maps can be indexed, but this is \(b.type)", at: span)
            return nil
        }
    }

    // MARK: - Paths

    /// A resolved path: the checked read plus what `has()` asks to test it.
    struct ResolvedPath {
        var checked: CheckedExpression
        /// nil when the path is always present.
        var presence: PresenceTest?
    }

    private static let roots = ["subject", "resource", "context"]
    private static let subjectFields = ["id", "tier", "signedIn", "roles", "auth", "subscriptionExpiry", "attributes"]
    private static let authFields = ["method", "verifiedAt"]
    private static let resourceFields = ["type", "id", "ownerId", "role", "members", "usage", "attributes"]
    private static let contextFields = ["now", "attributes"]

    mutating func checkPath(_ expr: Expr) -> ResolvedPath? {
        // Unwind the member chain into root + names.
        var names: [(String, ExpressionSpan)] = []
        var base = expr
        while case .member(let inner, let name, let nameSpan, _) = base {
            names.append((name, nameSpan))
            base = inner
        }
        names.reverse()
        guard case .identifier(let root, let rootSpan) = base else {
            // A field of a computed value, e.g. `[1].x` or `size(x).y`.
            guard let c = check(base), let (name, span) = names.first else { return nil }
            error(.unknownField, "\(c.type) has no field '\(name)'", at: span)
            return nil
        }
        guard Self.roots.contains(root) else {
            error(.unknownField, "unknown name '\(root)'", at: rootSpan,
                  help: Suggestion.help(for: root, kind: "names", known: Self.roots))
            return nil
        }
        var path = root
        var position = 0
        func nextName() -> (String, ExpressionSpan)? {
            guard position < names.count else { return nil }
            defer { position += 1 }
            return names[position]
        }
        func notAValue(_ fields: [String]) -> ResolvedPath? {
            let choices = fields.map { "\(path).\($0)" }.joined(separator: ", ")
            error(.expressionType, "'\(path)' is not a value", at: expr.span, help: ["use one of its fields: \(choices)"])
            return nil
        }
        /// `<root>.attributes.<name>`: the next name, checked against the scope's declarations.
        func declaredAttribute(_ scope: AttributeOwner, _ declared: [String: AttributeType]) -> ResolvedPath? {
            guard let (name, span) = nextName() else { return notAValue(declared.keys.sorted()) }
            path += ".\(name)"
            return attribute(scope, name, span, declared)
        }

        let result: ResolvedPath
        switch root {
        case "subject":
            guard let (name, span) = nextName() else { return notAValue(Self.subjectFields) }
            path += ".\(name)"
            switch name {
            case "id": result = field(.subjectId, .string)
            case "tier": result = field(.subjectTier, .string, domain: ValueDomain(code: .unknownTier, noun: "tier", plural: "tiers", values: schema.tiers))
            case "signedIn": result = field(.subjectSignedIn, .bool)
            case "roles": result = field(.subjectRoles, .list(.string), domain: ValueDomain(code: .unknownRole, noun: "role", plural: "roles", values: schema.appRoles))
            case "subscriptionExpiry": result = field(.subscriptionExpiry, .timestamp)
            case "auth":
                guard let (name, span) = nextName() else { return notAValue(Self.authFields) }
                path += ".\(name)"
                switch name {
                case "method": result = field(.authMethod, .string, domain: ValueDomain(code: .unknownMethod, noun: "auth method", plural: "auth methods", values: AuthMethod.all))
                case "verifiedAt": result = field(.authVerifiedAt, .timestamp)
                default: return unknownField(name, on: "subject.auth", span: span, known: Self.authFields)
                }
            case "attributes":
                guard let r = declaredAttribute(.subject, schema.subjectAttributes) else { return nil }
                result = r
            default: return unknownField(name, on: "subject", span: span, known: Self.subjectFields)
            }
        case "resource":
            guard let (name, span) = nextName() else { return notAValue(Self.resourceFields) }
            path += ".\(name)"
            let roleDomain = ValueDomain(code: .unknownRole, noun: "resource role", plural: "resource roles", values: schema.resourceRoles)
            switch name {
            case "type": result = field(.resourceType, .string, domain: ValueDomain(code: .unknownResourceType, noun: "resource type", plural: "resource types", values: schema.resourceTypes))
            case "id": result = field(.resourceId, .string)
            case "ownerId": result = field(.resourceOwnerId, .string)
            case "role": result = field(.resourceRole, .string, domain: roleDomain)
            case "members": result = field(.resourceMembers, .map, domain: roleDomain)
            case "usage":
                guard let (name, _) = nextName() else { return notAValue(["NAME"]) }
                path += ".\(name)"
                noteRead(path)
                result = ResolvedPath(checked: CheckedExpression(node: .usage(name), type: .int), presence: .usage(name))
            case "attributes":
                guard let r = declaredAttribute(.resource, schema.resourceAttributes) else { return nil }
                result = r
            default: return unknownField(name, on: "resource", span: span, known: Self.resourceFields)
            }
        default:
            guard let (name, span) = nextName() else { return notAValue(Self.contextFields) }
            path += ".\(name)"
            switch name {
            case "now": result = field(.now, .timestamp)
            case "attributes":
                guard let r = declaredAttribute(.context, schema.contextAttributes) else { return nil }
                result = r
            default: return unknownField(name, on: "context", span: span, known: Self.contextFields)
            }
        }
        if let (name, span) = nextName() {
            error(.unknownField, "'\(path)' is a \(result.checked.type) and has no field '\(name)'", at: span)
            return nil
        }
        return result
    }

    private mutating func field(_ field: ConditionField, _ type: ExpressionType, domain: ValueDomain? = nil) -> ResolvedPath {
        noteRead(field.rawValue)
        return ResolvedPath(
            checked: CheckedExpression(node: .field(field), type: type, domain: domain),
            presence: field.isOptional ? .field(field) : nil)
    }

    private mutating func attribute(
        _ scope: AttributeOwner, _ name: String, _ span: ExpressionSpan, _ declared: [String: AttributeType]
    ) -> ResolvedPath? {
        guard let type = declared[name] else {
            error(.unknownAttribute, "unknown attribute '\(name)' on \(scope.rawValue)", at: span,
                  help: Suggestion.help(for: name, kind: "\(scope.rawValue) attributes", known: declared.keys.sorted()))
            return nil
        }
        let path = "\(scope.rawValue).attributes.\(name)"
        noteRead(path)
        var domain: ValueDomain?
        var base = type
        while case .list(let element) = base { base = element }
        if case .enumeration(let values) = base {
            domain = ValueDomain(code: .unknownValue, noun: "value", owner: " for \(path)", plural: "values", values: values)
        }
        return ResolvedPath(
            checked: CheckedExpression(node: .attribute(scope, name, type.conditionType), type: ExpressionType(type), domain: domain),
            presence: .attribute(scope, name))
    }

    private mutating func unknownField(_ name: String, on owner: String, span: ExpressionSpan, known: [String]) -> ResolvedPath? {
        error(.unknownField, "unknown field '\(name)' on \(owner)", at: span,
              help: Suggestion.help(for: name, kind: "fields of \(owner)", known: known))
        return nil
    }

    // MARK: - Calls

    private static let functions = ["has", "size", "duration", "timestamp"]
    private static let methods = ["startsWith", "endsWith", "contains", "size"]

    mutating func checkFunction(_ name: String, _ nameSpan: ExpressionSpan, _ arguments: [Expr], _ span: ExpressionSpan) -> CheckedExpression? {
        guard Self.functions.contains(name) else {
            var help = Suggestion.help(for: name, kind: "functions", known: Self.functions)
            if Self.methods.contains(name) { help = ["'\(name)' is a method: write text.\(name)(\"...\")"] }
            error(.unknownFunction, "unknown function '\(name)'", at: nameSpan, help: help)
            return nil
        }
        guard arguments.count == 1, let argument = arguments.first else {
            error(.expressionType, "\(name)() takes 1 argument, but \(arguments.count) are given", at: span)
            return nil
        }
        switch name {
        case "has":
            guard argument.dottedPath != nil else {
                error(.expressionType, "has() takes a path such as subject.attributes.name or resource.ownerId", at: argument.span,
                      help: ["to test membership, write `subject.id in resource.members`"])
                return nil
            }
            guard let resolved = checkPath(argument) else { return nil }
            guard let presence = resolved.presence else {
                error(.expressionType, "'\(argument.dottedPath ?? "")' is always present, so has() would always be true", at: argument.span)
                return nil
            }
            return CheckedExpression(node: .has(presence), type: .bool)
        case "size":
            guard let c = check(argument) else { return nil }
            return checkSize(c, argument.span)
        default:
            guard case .literal(.string(let text), let literalSpan) = argument else {
                error(.expressionType, "\(name)() takes a string literal", at: argument.span,
                      help: [name == "duration" ? "e.g. duration(\"5m\")" : "e.g. timestamp(\"2026-11-22T12:00:00Z\")"])
                return nil
            }
            if name == "duration" {
                guard let seconds = DurationText.seconds(text) else {
                    error(.expressionSyntax, "invalid duration '\(text)'", at: literalSpan,
                          help: ["a duration is numbers with units h, m, s or ms, such as \"5m\", \"1h30m\" or \"250ms\""])
                    return nil
                }
                return CheckedExpression(node: .constant(.duration(seconds)), type: .duration)
            }
            guard let date = Timestamp.parse(text) else {
                error(.expressionSyntax, "invalid timestamp '\(text)'", at: literalSpan,
                      help: ["a timestamp is RFC 3339, such as \"2026-11-22T12:00:00Z\""])
                return nil
            }
            return CheckedExpression(node: .constant(.timestamp(date.timeIntervalSince1970)), type: .timestamp)
        }
    }

    mutating func checkSize(_ c: CheckedExpression, _ span: ExpressionSpan) -> CheckedExpression? {
        switch c.type {
        case .string, .list, .map: return CheckedExpression(node: folded(.size(c.node)), type: .int)
        default:
            error(.expressionType, "size() needs a string, list or map, but this is \(c.type)", at: span)
            return nil
        }
    }

    mutating func checkMethod(
        _ receiver: Expr, _ name: String, _ nameSpan: ExpressionSpan, _ arguments: [Expr], _ span: ExpressionSpan
    ) -> CheckedExpression? {
        guard Self.methods.contains(name) else {
            var help = Suggestion.help(for: name, kind: "methods", known: Self.methods)
            if Self.functions.contains(name) { help = ["'\(name)' is a function: write \(name)(...)"] }
            error(.unknownFunction, "unknown method '\(name)'", at: nameSpan, help: help)
            return nil
        }
        guard let r = check(receiver) else { return nil }
        if name == "size" {
            guard arguments.isEmpty else {
                error(.expressionType, "size() as a method takes no arguments", at: span)
                return nil
            }
            return checkSize(r, receiver.span)
        }
        guard r.type == .string else {
            error(.expressionType, "\(name)() needs a string, but this is \(r.type)", at: receiver.span)
            return nil
        }
        guard arguments.count == 1, let argument = arguments.first else {
            error(.expressionType, "\(name)() takes 1 argument, but \(arguments.count) are given", at: span)
            return nil
        }
        guard let a = check(argument) else { return nil }
        guard a.type == .string else {
            error(.expressionType, "\(name)() takes a string, but this is \(a.type)", at: argument.span)
            return nil
        }
        let test: StringTest = name == "startsWith" ? .startsWith : name == "endsWith" ? .endsWith : .contains
        return CheckedExpression(node: folded(.stringTest(test, r.node, a.node)), type: .bool)
    }

    // MARK: - Operators

    mutating func checkBinary(
        _ op: BinaryOperator, _ left: Expr, _ right: Expr, _ operatorSpan: ExpressionSpan, _ span: ExpressionSpan
    ) -> CheckedExpression? {
        let l = check(left)
        let r = check(right)
        guard let l, let r else { return nil }
        switch op {
        case .and, .or:
            guard l.type == .bool, r.type == .bool else {
                let bad = l.type != .bool ? (left, l.type) : (right, r.type)
                error(
                    .expressionType, "'\(op.rawValue)' needs bool operands, but this is \(bad.1)", at: bad.0.span,
                    help: ["make it a bool by comparing it, e.g. `x == \"value\"`, `x > 0` or `has(x)`"])
                return nil
            }
            return CheckedExpression(node: folded(l.node, r.node, decidedBy: op == .or), type: .bool)
        case .equal, .notEqual:
            guard l.type.isComparable(with: r.type) else {
                var help: [String] = []
                if l.type == .null || r.type == .null {
                    help = ["to test whether a value is present, use has(path)"]
                } else if case .list(let element) = l.type, element.isComparable(with: r.type) {
                    help = ["to test membership, write `x in list`"]
                } else if case .list(let element) = r.type, element.isComparable(with: l.type) {
                    help = ["to test membership, write `x in list`"]
                } else if let other = l.type == .bool ? r.type : r.type == .bool ? l.type : nil, other == .string {
                    help = ["the \(l.type == .bool ? "left" : "right") side is bool: compare it with true or false, unquoted (`== true`), or use it alone"]
                } else if let other = l.type == .string ? r.type : r.type == .string ? l.type : nil, other == .int || other == .double {
                    help = ["the \(l.type == .string ? "right" : "left") side is a number: write the other side as a number, unquoted"]
                }
                error(.expressionType, "cannot compare \(l.type) with \(r.type) using '\(op.rawValue)'", at: span, help: help)
                return nil
            }
            checkDomain(of: l, against: right)
            checkDomain(of: r, against: left)
            let comparison: ComparisonOperator = op == .equal ? .equal : .notEqual
            return CheckedExpression(node: folded(.compare(comparison, l.node, r.node)), type: .bool)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let orderable = (l.type.isNumeric && r.type.isNumeric)
                || (l.type == r.type && [.string, .timestamp, .duration].contains(l.type))
            guard orderable else {
                error(.expressionType, "cannot order \(l.type) and \(r.type) with '\(op.rawValue)'", at: span,
                      help: ["'<', '<=', '>', '>=' compare numbers, strings, timestamps or durations of the same kind"])
                return nil
            }
            let comparison = ComparisonOperator(rawValue: op.rawValue) ?? .less
            return CheckedExpression(node: folded(.compare(comparison, l.node, r.node)), type: .bool)
        case .in:
            return checkIn(l, r, left, right, span)
        case .add, .subtract:
            let type: ExpressionType?
            switch (l.type, r.type) {
            case (.int, .int): type = .int
            case _ where l.type.isNumeric && r.type.isNumeric: type = .double
            case (.timestamp, .duration): type = .timestamp
            case (.duration, .timestamp): type = op == .add ? .timestamp : nil
            case (.duration, .duration): type = .duration
            case (.timestamp, .timestamp): type = op == .subtract ? .duration : nil
            default: type = nil
            }
            guard let type else {
                error(.expressionType, "cannot \(op == .add ? "add" : "subtract") \(l.type) and \(r.type)", at: span,
                      help: ["'+' and '-' work on numbers, timestamp +/- duration, timestamp - timestamp, and durations"])
                return nil
            }
            let node: ConditionNode = op == .add ? .add(l.node, r.node) : .subtract(l.node, r.node)
            return CheckedExpression(node: folded(node), type: type)
        }
    }

    mutating func checkIn(
        _ l: CheckedExpression, _ r: CheckedExpression, _ left: Expr, _ right: Expr, _ span: ExpressionSpan
    ) -> CheckedExpression? {
        switch r.type {
        case .list(let element):
            guard element.isComparable(with: l.type) else {
                error(.expressionType, "cannot look for \(l.type) in \(r.type)", at: span)
                return nil
            }
        case .map:
            guard l.type == .string else {
                error(.expressionType, "map keys are strings, but this is \(l.type)", at: left.span)
                return nil
            }
        default:
            error(.expressionType, "'in' needs a list or map on its right, but this is \(r.type)", at: right.span)
            return nil
        }
        // Literals against a known domain: `subject.tier in ["pro"]`, `"admin" in subject.roles`.
        if case .list(let items, _) = right {
            for item in items { checkDomain(of: l, against: item) }
        }
        if r.type != .map { checkDomain(of: r, against: left) }

        let node: ConditionNode
        switch r.node {
        case .constant(.list(.items(let values))):
            var strings: Set<String> = []
            var allStrings = l.type == .string
            for value in values {
                guard case .string(let s) = value else {
                    allStrings = false
                    break
                }
                strings.insert(s)
            }
            node = allStrings ? .inStrings(l.node, strings) : .inValues(l.node, values)
        case .list(let items):
            node = .inItems(l.node, items)
        default:
            node = .contains(element: l.node, container: r.node)
        }
        return CheckedExpression(node: folded(node), type: .bool)
    }

    /// Reports a string literal `other` that lies outside the domain of `value`.
    mutating func checkDomain(of value: CheckedExpression, against other: Expr) {
        guard let domain = value.domain, case .literal(.string(let text), let span) = other, !domain.values.contains(text) else { return }
        error(domain.code, "unknown \(domain.noun) '\(text)'\(domain.owner)", at: span,
              help: Suggestion.help(for: text, kind: domain.plural, known: domain.values))
    }

    // MARK: - Constant folding

    /// The node, or its value when every operand is a constant and evaluating it succeeds.
    ///
    /// A constant that fails (say, an overflow) stays a node, so the condition errors at decide time as written.
    func folded(_ node: ConditionNode) -> ConditionNode {
        let operands: [ConditionNode]
        switch node {
        case .not(let a), .negate(let a), .size(let a): operands = [a]
        case .compare(_, let a, let b), .add(let a, let b), .subtract(let a, let b), .index(let a, let b),
            .stringTest(_, let a, let b), .contains(let a, let b):
            operands = [a, b]
        case .inStrings(let a, _), .inValues(let a, _): operands = [a]
        case .inItems(let a, let items): operands = [a] + items
        default: return node
        }
        guard operands.allSatisfy(\.isConstant) else { return node }
        let input = EvaluationInput(
            request: Request(action: "", resource: Resource(type: "")), now: Date(timeIntervalSince1970: 0), effectiveTier: "",
            signedIn: false, resourceRole: nil)
        return node.evaluate(input).map { .constant($0) } ?? node
    }

    /// `a && b` (`decidedBy` false) or `a || b` (`decidedBy` true) with CEL's rules: a constant deciding value
    /// decides, a constant other value drops out.
    func folded(_ a: ConditionNode, _ b: ConditionNode, decidedBy decisive: Bool) -> ConditionNode {
        switch (a, b) {
        case (.constant(.bool(decisive)), _), (_, .constant(.bool(decisive))): .constant(.bool(decisive))
        case (.constant(.bool(!decisive)), _): b
        case (_, .constant(.bool(!decisive))): a
        default: decisive ? .or(a, b) : .and(a, b)
        }
    }
}
