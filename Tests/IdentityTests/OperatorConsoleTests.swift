import Foundation
import PolicyModel
import Testing

@testable import Identity

/// The identity layer of the operator console (issue 43) on every store: finding a user, the user's page, ending
/// sessions and subscriptions, each operator write audited with the operator named, nothing done without a credential.
@Suite(.storeScope) struct OperatorConsoleTests {
    static let op = OperatorCredential(token: OperatorCredential.testToken)

    @Test(arguments: StoreKind.testable) func findsAUserByEachKeyAndShowsTheirPage(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.service.register(username: "alice", pin: "482615", source: .inProcess)
        let second = try await h.service.signIn(username: "alice", pin: "482615", source: .inProcess)
        _ = try await h.service.createSpace(accessToken: alice.accessToken, name: "Casa <b>", inviteRole: "editor")
        try await h.service.recordSubscription(userId: alice.userId, productId: "pro.monthly", expiresAt: nil, productTiers: ["pro.monthly": "pro"], operator: Self.op)
        try await h.service.setAppRoles(userId: alice.userId, roles: ["driver"], declared: ["driver", "admin"], operator: Self.op)

        let pseudonym = try #require(try await h.rows(UserRow.self).first { $0.id == alice.userId }).pseudonym
        for (query, how) in [(alice.userId, "id"), ("alice", "username"), ("ALICE", "username"), (pseudonym, "pseudonym")] {
            let found = try await h.service.findUsers(query, operator: Self.op)
            #expect(found.map(\.id) == [alice.userId] && found.first?.matchedBy == how, "\(query)")
        }
        #expect(try await h.service.findUsers("nobody", operator: Self.op).isEmpty)
        #expect(await identityError { try await h.service.findUsers("  ", operator: Self.op) }?.field == "q")

        let page = try await h.service.operatorUserPage(userId: alice.userId, operator: Self.op)
        #expect(page.user.username == "alice")
        #expect(page.tier.tier == "pro" && page.tier.source == "operator")
        #expect(page.roles == ["driver"])
        #expect(page.spaces.map(\.name) == ["Casa <b>"] && page.spaces.first?.role == "owner")
        #expect(page.sessions.count == 2 && page.sessions.allSatisfy(\.live))
        #expect(page.credentials.map(\.kind) == ["pin"])
        #expect(page.privacy == PrivacySettings())
        let label = Self.op.auditLabel
        #expect(label.hasPrefix("operator:") && !label.contains(OperatorCredential.testToken))
        #expect(page.audit.contains { $0.kind == "roles_changed" && $0.method == label })
        #expect(page.audit.contains { $0.kind == "subscription_changed" && $0.method == label })

        // Ending one session ends only it; signing out everywhere ends the rest; both audited with the operator.
        try await h.service.endSession(userId: alice.userId, sessionId: second.sessionId, operator: Self.op)
        #expect(await identityError { try await h.service.validate(accessToken: second.accessToken) }?.code == .unauthenticated)
        _ = try await h.service.validate(accessToken: alice.accessToken)
        #expect(try await h.service.signOutEverywhere(userId: alice.userId, operator: Self.op) == 1)
        #expect(await identityError { try await h.service.validate(accessToken: alice.accessToken) }?.code == .unauthenticated)
        try await h.service.endSubscription(userId: alice.userId, operator: Self.op)
        let after = try await h.service.operatorUserPage(userId: alice.userId, operator: Self.op)
        #expect(after.tier.source == "none" && after.tier.tier == nil)
        #expect(after.sessions.allSatisfy { !$0.live && $0.revokedReason == "operator" })
        #expect(after.audit.filter { $0.method == label }.map(\.kind).starts(with: ["subscription_changed", "sign_out_everywhere", "sessions_revoked"]))

        // Another user's session is not this user's to end.
        let bob = try await h.service.signInAnonymously(source: .inProcess)
        #expect(await identityError { try await h.service.endSession(userId: alice.userId, sessionId: bob.sessionId, operator: Self.op) }?.field == "sessionId")
        #expect(await identityError { try await h.service.operatorUserPage(userId: "no-such-user", operator: Self.op) }?.code == .notFound)
    }

    /// App roles come from the policy set (`declared`): one outside MimiSupply's four (`customer`, `driver`, `partner`,
    /// `admin`) is stored like them. The v1 table checked for those four names, so `support` failed as a storage error.
    @Test(arguments: StoreKind.testable) func aDeclaredRoleOfAnyNameIsStored(store: StoreKind) async throws {
        let h = try await Harness(store)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        try await h.service.setAppRoles(userId: user.userId, roles: ["support", "field_agent"], declared: ["support", "field_agent"], operator: Self.op)
        #expect(try await h.service.subject(accessToken: user.accessToken).roles == ["field_agent", "support"])
    }

    @Test(arguments: StoreKind.testable) func nothingWithoutTheOperatorsCredential(store: StoreKind) async throws {
        let h = try await Harness(store)
        let user = try await h.service.signInAnonymously(source: .inProcess)
        let wrong = OperatorCredential(token: "not-the-operator-token")
        #expect(await identityError { try await h.service.findUsers(user.userId, operator: wrong) }?.code == .forbidden)
        #expect(await identityError { try await h.service.operatorUserPage(userId: user.userId, operator: wrong) }?.code == .forbidden)
        #expect(await identityError { try await h.service.endSession(userId: user.userId, sessionId: user.sessionId, operator: wrong) }?.code == .forbidden)
        #expect(await identityError { try await h.service.signOutEverywhere(userId: user.userId, operator: wrong) }?.code == .forbidden)
        #expect(await identityError { try await h.service.endSubscription(userId: user.userId, operator: wrong) }?.code == .forbidden)
        #expect(await identityError { try await h.service.decisionCounts(operator: wrong) }?.code == .forbidden)
        _ = try await h.service.validate(accessToken: user.accessToken)
    }
}
