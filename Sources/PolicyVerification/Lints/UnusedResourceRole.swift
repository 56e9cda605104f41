import PolicyCompiler
import PolicyModel

/// `unused-resource-role`: a member role that grants no action, so a member holding it can do nothing.
///
/// A role is used when it grants actions (itself or through `inherits:`), when it is the type's owner role, when a
/// condition compares `resource.role` or `resource.members` with its name, or when the type has `memberActions:`
/// (every member may take those whatever the role). A condition reading those paths without a literal silences it.
struct UnusedResourceRole: LintFinding {
    static let code = DiagnosticCode.unusedResourceRole
    /// The role's id as declared.
    let role: Located<String>
    /// The resource type that declares it.
    let resourceType: String

    static func find(in input: LintInput) -> [UnusedResourceRole] {
        guard let named = ConditionReads(input.policy).literals(on: [.field(.resourceRole), .field(.resourceMembers)]) else { return [] }
        var findings: [UnusedResourceRole] = []
        for type in input.declarations.resourceTypes where type.memberActions.isEmpty {
            let roles = Dictionary(type.roles.map { ($0.id.value, $0) }, uniquingKeysWith: { a, _ in a })
            for role in type.roles {
                let name = role.id.value
                if name == type.ownerRole?.value || named.contains(name) { continue }
                if !grants(of: name, roles: roles).isEmpty { continue }
                findings.append(UnusedResourceRole(role: role.id, resourceType: type.id.value))
            }
        }
        return findings
    }

    /// Every action a resource role grants, through inheritance too.
    static func grants(of role: String, roles: [String: RoleDecl]) -> Set<String> {
        var seen: Set<String> = []
        var pending = [role]
        var actions: Set<String> = []
        while let next = pending.popLast() {
            guard seen.insert(next).inserted, let decl = roles[next] else { continue }
            actions.formUnion(decl.grants.map(\.value))
            pending += decl.inherits.map(\.value)
        }
        return actions
    }

    var at: Located<String> { role }
    var message: String { "role '\(role.value)' of '\(resourceType)' grants no action, so a member holding it can do nothing" }
    var help: String { "give it `grants:` or `inherits:`, list actions every member may take in `memberActions:`, or remove the role" }
}
