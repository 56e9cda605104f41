import PolicyCompiler
import PolicyModel

/// `unused-attribute`: a declared subject, resource or context attribute no condition reads.
///
/// An attribute is read by a rule or consent condition naming its path (`resource.attributes.amount`), or by a
/// resource type whose `owner:` is one of its attributes. A declaration nothing reads only types values no one looks at.
struct UnusedAttribute: LintFinding {
    static let code = DiagnosticCode.unusedAttribute
    /// `subject`, `resource` or `context`.
    let scope: String
    /// The attribute's name as declared.
    let name: Located<String>

    static func find(in input: LintInput) -> [UnusedAttribute] {
        var read = Set(ConditionReads(input.policy).reads.map(\.path))
        for type in input.declarations.resourceTypes {
            if let owner = type.owner?.value, owner.hasPrefix("attributes.") { read.insert("resource." + owner) }
        }
        return input.declarations.attributes.map { UnusedAttribute(scope: $0.scope.rawValue, name: $0.name) }.filter { !read.contains($0.path) }
    }

    /// The path a condition reads it by.
    var path: String { "\(scope).attributes.\(name.value)" }
    var at: Located<String> { name }
    var message: String { "\(scope) attribute '\(name.value)' is declared but no condition reads it" }
    var help: String { "read it as `\(path)` in a rule or consent condition, or remove the declaration" }
}
