import PolicyModel
import PolicySyntax

/// Everything a policy set declares, gathered from all its files, each piece with its location.
///
/// This is the compiler's own tree: the decode pass fills it from YAML, later passes read it.
package struct PolicyDeclarations: Sendable {
    package var tiers: [TierDecl] = []
    package var features: [FeatureDecl] = []
    package var limits: [LimitDecl] = []
    package var appRoles: [AppRoleDecl] = []
    package var attributes: [AttributeDecl] = []
    package var resourceTypes: [ResourceTypeDecl] = []
    package var rules: [RuleDecl] = []
    package var messages: [MessageDecl] = []
    package var tests: [TestDecl] = []
    package var invariants: [InvariantDecl] = []
    package init() {}
}

package struct TierDecl: Sendable {
    package var id: Located<String>
    package var name: String
    package var price: String?
    package var isDefault: Located<Bool>?
    package var products: [Located<String>]
}

package struct FeatureDecl: Sendable {
    package var id: Located<String>
    package var name: String
    package var tiers: [Located<String>]
    package var upgradeTo: Located<String>?
}

package struct LimitDecl: Sendable {
    package var id: Located<String>
    package var name: String
    /// The `resource.usage` counter the limit reads.
    package var counter: String
    /// Tier to its cap; a tier left out is unlimited.
    package var caps: [(tier: Located<String>, cap: Located<Int>)]
    package var upgradeTo: Located<String>?
}

package struct AppRoleDecl: Sendable {
    package var id: Located<String>
    package var name: String
}

package enum AttributeScope: String, Sendable, CaseIterable {
    case subject, resource, context
}

package struct AttributeDecl: Sendable {
    package var scope: AttributeScope
    package var name: Located<String>
    package var type: AttributeType
}

package struct ResourceTypeDecl: Sendable {
    package var id: Located<String>
    /// The request field naming the owner (`ownerId`); the owner may take every action of the type.
    package var owner: Located<String>?
    /// The member role that counts as ownership.
    package var ownerRole: Located<String>?
    /// Actions every member may take, whatever their role.
    package var memberActions: [Located<String>]
    package var roles: [RoleDecl]
    /// Where `roles:` is written: membership decisions point here.
    package var rolesLocation: SourceLocation?
    package var actions: [ActionDecl]
    package var messages: [MessageDecl]
}

package struct RoleDecl: Sendable {
    package var id: Located<String>
    package var inherits: [Located<String>]
    package var grants: [Located<String>]
}

package struct ActionDecl: Sendable {
    package var id: Located<String>
    package var signIn: Located<Bool>?
    package var auth: AuthDecl?
    package var appRoles: [Located<String>]?
    package var appRolesLocation: SourceLocation?
    package var feature: Located<String>?
    package var limit: Located<String>?
    package var consent: ConsentDecl?
    package var messages: [MessageDecl]
}

package struct AuthDecl: Sendable {
    package var location: SourceLocation
    package var methods: [Located<String>]
    package var maxAge: Located<Double>?
}

package struct ConsentDecl: Sendable {
    package var location: SourceLocation
    package var name: String?
    /// The condition under which the subject has consented; `nil` means consent can never be given.
    package var when: Located<String>?
    package var continuationColumn: Int?
}

package struct RuleDecl: Sendable {
    package var location: SourceLocation
    package var name: String?
    package var effect: Effect
    /// Resource types the rule applies to; nil means every type.
    package var resourceTypes: [Located<String>]?
    /// Actions the rule applies to; nil means every action of those types.
    package var actions: [Located<String>]?
    package var when: Located<String>?
    package var continuationColumn: Int?
    package var message: Located<String>?
}

package struct MessageDecl: Sendable {
    package var reason: Located<String>
    package var text: Located<String>
}

package struct TestDecl: Sendable {
    package var location: SourceLocation
    package var name: String
    package var request: SyntaxNode
    package var expect: ExpectDecl
}

package struct ExpectDecl: Sendable {
    package var location: SourceLocation
    package var effect: Located<Effect>?
    package var reason: Located<String>?
    package var message: Located<String>?
    package var upgradeTo: Located<String>?
    package var limit: Located<Int>?
    package var used: Located<Int>?
    package var remaining: Located<Int>?
}

/// An invariant as written; `PolicyVerification` proves it.
package struct InvariantDecl: Sendable {
    package var location: SourceLocation
    package var name: String
    package var node: SyntaxNode
}
