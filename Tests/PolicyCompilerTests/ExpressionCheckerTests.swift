import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax
import Testing

func diagnostics(_ text: String) -> [Diagnostic] {
    if case .failure(let d) = compile(text) { return d.diagnostics }
    return []
}

@Suite struct ExpressionCheckerTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        var code: String
        var column: Int
        var length: Int
        var message: String
        var help: String?
        var testDescription: String { text }
    }

    @Test(arguments: [
        Case(text: #"subject.tier == "teem""#, code: "unknown-tier", column: 26, length: 6, message: "unknown tier 'teem'",
             help: "did you mean 'team'? Known tiers: free, pro, academic, team"),
        Case(text: #"subject.tier != "premium""#, code: "unknown-tier", column: 26, length: 9, message: "unknown tier 'premium'",
             help: "Known tiers: free, pro, academic, team"),
        Case(text: #"subject.tier in ["pro", "teams"]"#, code: "unknown-tier", column: 34, length: 7, message: "unknown tier 'teams'",
             help: "did you mean 'team'? Known tiers: free, pro, academic, team"),
        Case(text: #""admn" in subject.roles"#, code: "unknown-role", column: 10, length: 6, message: "unknown role 'admn'",
             help: "did you mean 'admin'? Known roles: customer, driver, partner, admin"),
        Case(text: #"subject.roles[0] == "drivr""#, code: "unknown-role", column: 30, length: 7, message: "unknown role 'drivr'",
             help: "did you mean 'driver'? Known roles: customer, driver, partner, admin"),
        Case(text: #"subject.auth.method in ["pin", "biometrc"]"#, code: "unknown-method", column: 41, length: 10,
             message: "unknown auth method 'biometrc'", help: "did you mean 'biometric'? Known auth methods: anonymous, apple, pin, biometric, password"),
        Case(text: #"resource.type == "projet""#, code: "unknown-resource-type", column: 27, length: 8,
             message: "unknown resource type 'projet'", help: "did you mean 'project'? Known resource types: project, document"),
        Case(text: #"resource.role == "editr""#, code: "unknown-role", column: 27, length: 7, message: "unknown resource role 'editr'",
             help: "did you mean 'editor'? Known resource roles: owner, editor, commenter, viewer"),
        Case(text: #"resource.members[subject.id] == "viewr""#, code: "unknown-role", column: 42, length: 7,
             message: "unknown resource role 'viewr'", help: "did you mean 'viewer'? Known resource roles: owner, editor, commenter, viewer"),
        Case(text: #"subject.attributes.dataSharing == "minimall""#, code: "unknown-value", column: 44, length: 10,
             message: "unknown value 'minimall' for subject.attributes.dataSharing", help: "did you mean 'minimal'? Known values: none, minimal, full"),
        Case(text: "subject.attributes.analytcs", code: "unknown-attribute", column: 29, length: 8,
             message: "unknown attribute 'analytcs' on subject",
             help: "did you mean 'analytics'? Known subject attributes: analytics, birthYear, dataSharing, groups, nickname, score, trustedUntil"),
        Case(text: "resource.attributes.amont > 3", code: "unknown-attribute", column: 30, length: 5,
             message: "unknown attribute 'amont' on resource", help: "did you mean 'amount'? Known resource attributes: amount, count, deadline, matrix, status, tags"),
        Case(text: "context.attributes.regin == 'eu'", code: "unknown-attribute", column: 29, length: 5,
             message: "unknown attribute 'regin' on context", help: "did you mean 'region'? Known context attributes: region, window"),
        Case(text: #"subject.tierr == "pro""#, code: "unknown-field", column: 18, length: 5, message: "unknown field 'tierr' on subject",
             help: "did you mean 'tier'? Known fields of subject: id, tier, signedIn, roles, auth, subscriptionExpiry, attributes"),
        Case(text: "subject.auth.metod == 'pin'", code: "unknown-field", column: 23, length: 5, message: "unknown field 'metod' on subject.auth",
             help: "did you mean 'method'? Known fields of subject.auth: method, verifiedAt"),
        Case(text: "subjct.signedIn", code: "unknown-field", column: 10, length: 6, message: "unknown name 'subjct'",
             help: "did you mean 'subject'? Known names: subject, resource, context"),
        Case(text: "subject.id.length > 3", code: "unknown-field", column: 21, length: 6,
             message: "'subject.id' is a string and has no field 'length'", help: nil),
        Case(text: "sise(subject.roles) > 0", code: "unknown-function", column: 10, length: 4, message: "unknown function 'sise'",
             help: "did you mean 'size'? Known functions: has, size, duration, timestamp"),
        Case(text: "subject.id.startWith('a')", code: "unknown-function", column: 21, length: 9, message: "unknown method 'startWith'",
             help: "did you mean 'startsWith'? Known methods: startsWith, endsWith, contains, size"),
        Case(text: "matches(subject.id, 'a')", code: "unknown-function", column: 10, length: 7, message: "unknown function 'matches'",
             help: "Known functions: has, size, duration, timestamp"),
        Case(text: "subject.roles == 3", code: "expression-type", column: 10, length: 18,
             message: "cannot compare list<string> with int using '=='", help: nil),
        Case(text: "subject.roles == 'admin'", code: "expression-type", column: 10, length: 24,
             message: "cannot compare list<string> with string using '=='", help: "to test membership, write `x in list`"),
        Case(text: #""a" < 1"#, code: "expression-type", column: 10, length: 7, message: "cannot order string and int with '<'",
             help: "'<', '<=', '>', '>=' compare numbers, strings, timestamps or durations of the same kind"),
        Case(text: "resource.usage.sources", code: "expression-type", column: 10, length: 22,
             message: "a condition must be bool, but this is int", help: "compare the value with something, e.g. `... == ...` or `... > 0`"),
        Case(text: "subject.id == null", code: "expression-type", column: 10, length: 18,
             message: "cannot compare string with null using '=='", help: "to test whether a value is present, use has(path)"),
        Case(text: "subject.signedIn && 1", code: "expression-type", column: 30, length: 1, message: "'&&' needs bool operands, but this is int",
             help: "make it a bool by comparing it, e.g. `x == \"value\"`, `x > 0` or `has(x)`"),
        Case(text: "subject.signedIn == \"true\"", code: "expression-type", column: 10, length: 26,
             message: "cannot compare bool with string using '=='",
             help: "the left side is bool: compare it with true or false, unquoted (`== true`), or use it alone"),
        Case(text: "!subject.id", code: "expression-type", column: 10, length: 11, message: "'!' needs a bool, but this is string", help: nil),
        Case(text: "has(subject.tier)", code: "expression-type", column: 14, length: 12,
             message: "'subject.tier' is always present, so has() would always be true", help: nil),
        Case(text: "has(resource.members[subject.id])", code: "expression-type", column: 14, length: 28,
             message: "has() takes a path such as subject.attributes.name or resource.ownerId",
             help: "to test membership, write `subject.id in resource.members`"),
        Case(text: "subject.auth == 'x'", code: "expression-type", column: 10, length: 12, message: "'subject.auth' is not a value",
             help: "use one of its fields: subject.auth.method, subject.auth.verifiedAt"),
        Case(text: "context.now + context.now > context.now", code: "expression-type", column: 10, length: 25,
             message: "cannot add timestamp and timestamp", help: "'+' and '-' work on numbers, timestamp +/- duration, timestamp - timestamp, and durations"),
        Case(text: "[1, 'a'] == []", code: "expression-type", column: 14, length: 3, message: "list elements must share one type, but this is string after int", help: nil),
        Case(text: "1 in subject.roles", code: "expression-type", column: 10, length: 18, message: "cannot look for int in list<string>", help: nil),
        Case(text: "3 in resource.members", code: "expression-type", column: 10, length: 1, message: "map keys are strings, but this is int", help: nil),
        Case(text: "size(3) == 1", code: "expression-type", column: 15, length: 1, message: "size() needs a string, list or map, but this is int", help: nil),
        Case(text: "duration('5x') < duration('1m')", code: "expression-syntax", column: 19, length: 4, message: "invalid duration '5x'",
             help: "a duration is numbers with units h, m, s or ms, such as \"5m\", \"1h30m\" or \"250ms\""),
        Case(text: "context.now < timestamp('tomorrow')", code: "expression-syntax", column: 34, length: 10, message: "invalid timestamp 'tomorrow'",
             help: "a timestamp is RFC 3339, such as \"2026-11-22T12:00:00Z\""),
        Case(text: "context.now < timestamp(subject.id)", code: "expression-type", column: 34, length: 10, message: "timestamp() takes a string literal",
             help: "e.g. timestamp(\"2026-11-22T12:00:00Z\")"),
        Case(text: "subject.tier ==", code: "expression-syntax", column: 25, length: 1, message: "unexpected end of condition",
             help: "the condition stops in the middle of an expression"),
    ])
    func reportsEachProblemAtItsPlace(c: Case) throws {
        let all = diagnostics(c.text)
        let d = try #require(all.first)
        #expect(all.count == 1)
        #expect(d.severity == .error)
        #expect(d.code == c.code)
        #expect(d.message == c.message)
        #expect(d.location == SourceLocation(file: "c.yaml", line: 5, column: c.column))
        #expect(d.length == c.length)
        #expect(d.help.first == c.help)
    }

    @Test func reportsEveryProblemNotJustTheFirst() {
        let all = diagnostics("subject.tierr == 'x' && resource.attributes.amont > 1 || sise(subject.id) == 1")
        #expect(all.map(\.code) == ["unknown-field", "unknown-attribute", "unknown-function"])
    }

    @Test func lengthAndDepthLimitsComeThrough() {
        #expect(diagnostics(String(repeating: "(", count: 5000) + "true" + String(repeating: ")", count: 5000)).map(\.code) == ["expression-too-long"])
        #expect(diagnostics(String(repeating: "(", count: 100) + "true" + String(repeating: ")", count: 100)).map(\.code) == ["expression-too-deep"])
    }

    @Test func domainChecksApplyToEveryKnownValue() {
        for text in [
            "subject.tier == 'pro'", "'admin' in subject.roles", "subject.auth.method in ['pin', 'biometric']", "resource.type != 'document'",
            "resource.role == 'owner'", "resource.members[subject.id] == 'viewer'", "subject.attributes.dataSharing == 'full'",
            "'draft' == resource.attributes.status", "subject.tier in []",
        ] {
            #expect(diagnostics(text).isEmpty, "\(text)")
        }
    }

    @Test func attributeTypeNames() {
        #expect(AttributeType.parse("int") == .int)
        #expect(AttributeType.parse(" list<string> ") == .list(.string))
        #expect(AttributeType.parse("list<list<timestamp>>") == .list(.list(.timestamp)))
        #expect(AttributeType.parse("integer") == nil)
        #expect(AttributeType.parse("list<>") == nil)
        #expect(AttributeType.parse(String(repeating: "list<", count: 100) + "int" + String(repeating: ">", count: 100)) == nil)
        #expect(AttributeType.knownNames.contains("list<string>"))
        #expect(Suggestion.closest(to: "strng", in: AttributeType.knownNames) == "string")
    }
}
