import Foundation
import PolicyModel

extension IdentityService {
    /// Replaces a user's app roles (an operator action). `declared` are the roles the policy set declares
    /// (`CompiledPolicy.declaredAppRoles`, e.g. MimiSupply's customer, driver, partner, admin): any other is refused,
    /// naming its index, and nothing is written.
    public func setAppRoles(userId: String, roles: [String], declared: [String]) async throws {
        try await setAppRoles(userId: userId, roles: roles, declared: declared, auditMethod: nil)
    }

    /// `setAppRoles`, its audit row's `method` naming who acted (`OperatorCredential.auditLabel`).
    func setAppRoles(userId: String, roles: [String], declared: [String], auditMethod: String?) async throws {
        var valid: Set<String> = []
        for (i, role) in roles.enumerated() {
            guard declared.contains(role) else {
                throw IdentityError.invalid(
                    "roles[\(i)]", declared.isEmpty ? "the policy set declares no app roles" : "must be one of \(declared.joined(separator: ", "))")
            }
            valid.insert(role)
        }
        let t = now()
        let chosen = valid.sorted()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.deleteAll(AppRoleRow.self, ["userId": .text(userId)])
            for role in chosen { try await tx.insert(AppRoleRow(userId: userId, role: role)) }
            try await self.audit(tx, .rolesChanged, method: auditMethod, outcome: .success, reason: chosen.joined(separator: ","), user: user, at: t)
        }
    }

    /// Records a store purchase: the tier comes from the policy set's product-id mapping.
    public func recordSubscription(userId: String, productId: String, expiresAt: Date?, productTiers: [String: String]) async throws {
        try await recordSubscription(userId: userId, productId: productId, expiresAt: expiresAt, productTiers: productTiers, auditMethod: nil)
    }

    /// `recordSubscription`, its audit row's `method` naming who acted (`OperatorCredential.auditLabel`).
    func recordSubscription(userId: String, productId: String, expiresAt: Date?, productTiers: [String: String], auditMethod: String?) async throws {
        guard let tier = productTiers[productId] else { throw IdentityError.invalid("productId", "is not a product of the policy set") }
        let t = now()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.upsert(SubscriptionRow(userId: userId, tier: tier, productId: productId, expiresAt: expiresAt, updatedAt: t))
            try await self.audit(tx, .subscriptionChanged, method: auditMethod, outcome: .success, reason: tier, user: user, at: t)
        }
    }
}
