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

/// An invariant as written; `PolicyVerification` proves it over the set's request space.
package struct InvariantDecl: Sendable {
    package var location: SourceLocation
    package var name: String
    /// Which requests of the space the invariant speaks about; an empty selector means all of them.
    package var selector: InvariantSelector
    package var expect: Located<InvariantExpectation>
    /// With `expect: deny` (or `allow`): the reasons the decision must carry, any of them.
    package var reasons: [Located<String>]
}

/// The `when:` of an invariant: each present key narrows the requests; a list means any of its values.
package struct InvariantSelector: Sendable {
    /// Resource type names.
    package var resources: [Located<String>]?
    /// Action names.
    package var actions: [Located<String>]?
    /// Subject classes: `signed-out`, `anonymous`, `signed-in`, `expired`.
    package var subjects: [Located<String>]?
    /// Effective tiers (what features and limits see: signed-out, anonymous and expired subjects get the default).
    package var tiers: [Located<String>]?
    /// The subject's standing on the resource: `owner`, `non-member`, or a role of the resource type.
    package var roles: [Located<String>]?
    /// App roles the subject holds (any of them); `none` for a subject with no app role.
    package var appRoles: [Located<String>]?
    /// App roles the subject holds none of.
    package var withoutAppRoles: [Located<String>]?
    /// Verification methods; `none` for a subject with no auth block.
    package var authMethods: [Located<String>]?
    /// Actions gated by one of these features.
    package var features: [Located<String>]?
    /// Actions counted against one of these limits.
    package var limits: [Located<String>]?

    package init() {}

    /// Every key with its values, for validation.
    package var keyed: [(key: String, values: [Located<String>])] {
        [("resource", resources), ("action", actions), ("subject", subjects), ("tier", tiers), ("role", roles),
         ("appRole", appRoles), ("withoutAppRole", withoutAppRoles), ("auth", authMethods), ("feature", features), ("limit", limits)]
            .compactMap { key, values in values.map { (key, $0) } }
    }
}

package enum InvariantExpectation: String, Sendable, Hashable, CaseIterable {
    /// Every selected request is allowed.
    case allow
    /// Every selected request is denied.
    case deny
    /// No allow rule decides any selected request (requirements alone may still allow).
    case noRuleAllows = "no-rule-allows"
    /// Every selected request that is denied carries a non-empty message.
    case denyHasMessage = "deny-has-message"
}
