import Foundation
import PolicyModel

/// The app roles a user may hold (seed 002); `setAppRoles` accepts only these, and a policy's `roles`
/// section names them.
public enum AppRole: String, Sendable, Hashable, CaseIterable {
    /// Browses and orders.
    case customer
    /// Delivers orders.
    case driver
    /// A business selling through the marketplace.
    case partner
    /// Administers the app (what that allows is up to the policy set).
    case admin
}

extension IdentityService {
    /// Replaces a user's app roles (an operator action).
    public func setAppRoles(userId: String, roles: [String]) async throws {
        var valid: Set<String> = []
        for (i, role) in roles.enumerated() {
            guard AppRole(rawValue: role) != nil else { throw IdentityError.invalid("roles[\(i)]", "must be one of customer, driver, partner, admin") }
            valid.insert(role)
        }
        let t = now()
        let chosen = valid.sorted()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.deleteAll(AppRoleRow.self, ["userId": .text(userId)])
            for role in chosen { try await tx.insert(AppRoleRow(userId: userId, role: role)) }
            try await self.audit(tx, .rolesChanged, outcome: .success, reason: chosen.joined(separator: ","), user: user, at: t)
        }
    }

    /// Records a store purchase: the tier comes from the policy set's product-id mapping.
    public func recordSubscription(userId: String, productId: String, expiresAt: Date?, productTiers: [String: String]) async throws {
        guard let tier = productTiers[productId] else { throw IdentityError.invalid("productId", "is not a product of the policy set") }
        let t = now()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            try await tx.upsert(SubscriptionRow(userId: userId, tier: tier, productId: productId, expiresAt: expiresAt, updatedAt: t))
            try await self.audit(tx, .subscriptionChanged, outcome: .success, reason: tier, user: user, at: t)
        }
    }
}
