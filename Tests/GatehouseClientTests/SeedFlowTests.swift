import Foundation
@testable import GatehouseClient
import Testing
import GatehouseTestSupport

/// Each seed app's flows through `GatehouseClient` against a real `policy serve` on loopback.
@Suite(.serialized, .startsServers) struct SeedFlowTests {
    static let app = Resource(type: "app")

    /// Research crawler (seed 000): anonymous, then an account; AI suggestions need Pro; a Pro subscription recorded by
    /// the operator route allows them; the free tier's 50-source limit says so in the seed's words.
    @Test func researchCrawler() async throws {
        try await withServer("research-crawler") { server in
            let store = InMemoryTokenStore()
            let client = server.client(store: store)
            let anonymous = try await client.signInAnonymously()
            #expect(await client.state == .signedIn(userId: anonymous))
            let signedOut = try await client.decide(action: "ai_suggestions", resource: Self.app)
            #expect(!signedOut.isAllowed)

            let userId = try await client.register(username: "ana.researcher", pin: "482913")
            #expect(userId != anonymous)
            let free = try await client.decide(action: "ai_suggestions", resource: Self.app)
            #expect(free.effect == .deny && free.reason == .requiresUpgrade && free.upgradeTo == "pro")
            #expect(free.message == "AI Suggestions requires Pro. Upgrade to unlock.")
            let why = try await client.explain(action: "ai_suggestions", resource: Self.app)
            #expect(why.decision == free)
            #expect(why.trace.contains { $0.outcome == "fail" })
            let encoded = try JSONDecoder().decode(DecisionExplanation.self, from: JSONEncoder().encode(why))
            #expect(encoded == why)

            // The App Store's part, by the operator route: a Pro subscription for this user.
            _ = try await server.asOperator { api in
                try await api.putOperatorUsersByIdSubscription(
                    path: .init(id: userId), body: .json(.init(productId: "com.researchapp.pro.monthly", expiresAt: nil))
                ).noContent
            }
            let pro = try await client.decide(action: "ai_suggestions", resource: Self.app)
            #expect(pro.effect == .allow && pro.reason == .allowed)
            #expect(try await client.me().tier == "pro")
            let gates = try await client.check(actions: ["ai_suggestions", "cloud_sync", "collaboration"], resource: Self.app)
            #expect(gates["ai_suggestions"]?.isAllowed == true && gates["cloud_sync"]?.isAllowed == true)
            #expect(gates["collaboration"]?.reason == .requiresUpgrade && gates["collaboration"]?.upgradeTo == "team")

            // A second, free account at 50 sources: the limit's message, with the figures.
            let other = server.client()
            let freeUser = try await other.register(username: "bea.free", pin: "735120")
            _ = try await server.asOperator { api in
                try await api.postOperatorUsersByIdUsage(path: .init(id: freeUser), body: .json(.init(counter: "sources", by: 50))).ok
            }
            let full = try await other.decide(action: "add_source", resource: Self.app)
            #expect(full.reason == .limitExceeded && full.limit == 50 && full.used == 50 && full.upgradeTo == "pro")
            #expect(full.message == "You've reached the limit of 50 sources. Upgrade to Pro for unlimited.")
            // One batch, one policy version: the Pro user's add_source is within no limit; a bad item fails alone.
            let batch = try await client.decideBatch([
                DecisionQuery(action: "add_source", resource: Self.app), DecisionQuery(action: "", resource: Self.app),
                DecisionQuery(action: "send_user_notes", resource: Self.app),
            ])
            #expect(batch.count == 3)
            #expect((try? batch[0].get())?.isAllowed == true)
            #expect((try? batch[2].get())?.reason == .consentRequired)

            // Privacy settings reach the policy: with AI suggestions and data sharing on, source metadata may leave.
            #expect(try await client.decide(action: "send_source_metadata", resource: Self.app).reason == .consentRequired)
            // (`dataSharing` is the policy model's `DataSharing`: a value the server does not know cannot be written.)
            let settings = try await client.updatePrivacy(PrivacyChange(aiSuggestions: true, dataSharing: .standard))
            #expect(settings.aiSuggestions && settings.dataSharing == .standard)
            #expect(try await client.privacySettings() == settings)
            #expect(try await client.decide(action: "send_source_metadata", resource: Self.app).isAllowed)

            // Export and delete (both need a recent verification: the PIN); on the way, a new username and Sign in with
            // Apple linked to the PIN account, then unlinked.
            try await client.verifyPIN("482913")
            try await client.setUsername("ana.r")
            let nonce = try await client.beginSignInWithApple()
            let appleToken = try server.apple.identityToken(subject: "000777.ana", nonceDigest: nonce.sha256)
            try await client.linkApple(identityToken: appleToken, nonce: nonce)
            let linked = try await client.me()
            #expect(linked.username == "ana.r" && linked.appleUserIds == ["000777.ana"])
            try await client.unlinkApple()
            #expect(try await client.me().appleUserIds.isEmpty)
            let export = try JSONSerialization.jsonObject(with: try await client.exportData()) as? [String: Any]
            #expect(export != nil)
            try await client.deleteAccount()
            #expect(await client.state == .signedOut)
            #expect(store.load() == nil)
        }
    }

    /// ContaCasal (seed 001): anonymous sessions with a PIN; a space shared by code; the partner sees it; a device key
    /// that fails to verify falls back to the PIN.
    @Test func contaCasal() async throws {
        try await withServer("contacasal") { server in
            let ana = server.client()
            try await ana.signInAnonymously()
            try await ana.setPIN("8053")
            let space = try await ana.createSpace(name: "Casa", inviteRole: "partner")
            let home = Resource(type: "space", id: space.resourceId)
            #expect(try await ana.decide(action: "view_dashboard", resource: home).isAllowed)

            let bruno = server.client()
            try await bruno.signInAnonymously()
            // Not yet a member.
            #expect(try await bruno.decide(action: "view_dashboard", resource: home).isAllowed == false)
            try await bruno.setPIN("2961")
            #expect(try await bruno.joinSpace(shareCode: space.shareCode) == space.resourceId)
            let partner = try await bruno.check(actions: ["view_dashboard", "add_expense", "remove_partner"], resource: home)
            #expect(partner["view_dashboard"]?.isAllowed == true && partner["add_expense"]?.isAllowed == true)
            #expect(partner["remove_partner"]?.isAllowed == false)

            // Face ID's stand-in: a device key enrolled, then a signature by another key fails; the PIN still works.
            let enrolled = SoftwareDeviceKey()
            try await bruno.enrollDevice("bruno-phone", key: enrolled)
            let failure = await thrownClientError { try await bruno.verifyDevice("bruno-phone", key: SoftwareDeviceKey()) }
            #expect(failure?.code == "invalid_credentials" && failure?.field == "signature" && failure?.status == 401)
            try await bruno.verifyPIN("2961")
            #expect(try await bruno.decide(action: "view_dashboard", resource: home).isAllowed)
            try await bruno.verifyDevice("bruno-phone", key: enrolled)
            #expect(try await bruno.decide(action: "add_expense", resource: home).isAllowed)
            #expect(try await bruno.me().deviceIds == ["bruno-phone"])
            // Too many failed signatures lock the key (423 `locked`); the PIN is the way back.
            let stranger = SoftwareDeviceKey()
            var last: GatehouseClientError?
            for _ in 0..<6 { last = await thrownClientError { try await bruno.verifyDevice("bruno-phone", key: stranger) } }
            #expect(last?.code == "locked" && last?.status == 423, "\(String(describing: last))")
            let lockedOut = await thrownClientError { try await bruno.verifyDevice("bruno-phone", key: enrolled) }
            #expect(lockedOut?.code == "locked")
            try await bruno.verifyPIN("2961")
            #expect(try await bruno.decide(action: "view_dashboard", resource: home).isAllowed)
            let wrongPIN = await thrownClientError { try await bruno.verifyPIN("0000") }
            #expect(wrongPIN?.code == "invalid_credentials" && wrongPIN?.field == "pin")
            #expect(!(wrongPIN?.description.contains("0000") ?? true))
        }
    }

    /// MimiSupply (seed 002): browse signed out, Sign in with Apple at checkout, checkout by role; when the access
    /// token expires, 20 concurrent decisions cause exactly one refresh (counted by the server); sign-out.
    @Test func mimiSupply() async throws {
        try await withServer("mimisupply", environment: ["GATEHOUSE_ACCESS_TOKEN_LIFETIME": "6"]) { server in
            let market = Resource(type: "marketplace")
            let store = InMemoryTokenStore()
            // Refreshed a second before expiry, so no call's token expires on its way to the server.
            let client = server.client(store: store, refreshMargin: 1)
            var states = await client.sessionStates().makeAsyncIterator()
            #expect(await states.next() == .signedOut)
            #expect(try await client.decide(action: "browse", resource: market).isAllowed)
            let gate = try await client.decide(action: "checkout", resource: market)
            #expect(gate.reason == .unauthenticated && gate.message == "Sign in with Apple to continue.")

            let nonce = try await client.beginSignInWithApple()
            let token = try server.apple.identityToken(subject: "001234.mimi.buyer", nonceDigest: nonce.sha256)
            let userId = try await client.signInWithApple(identityToken: token, nonce: nonce, fullName: "Mimi Buyer")
            #expect(await states.next() == .signedIn(userId: userId))
            #expect(try await client.me().displayName == "Mimi Buyer")
            let noRole = try await client.decide(action: "checkout", resource: market)
            #expect(noRole.reason == .roleRequired)
            _ = try await server.asOperator { api in
                try await api.putOperatorUsersByIdRoles(path: .init(id: userId), body: .json(.init(roles: ["customer"]))).noContent
            }
            #expect(try await client.decide(action: "checkout", resource: market).isAllowed)
            #expect(try await client.decide(action: "driver_mode", resource: market).message == "This area is for Driver accounts.")

            // The access token expires (a 6-second lifetime); then 20 decisions at once.
            let before = try #require(store.load())
            let wait = before.accessExpiresAt.timeIntervalSinceNow + 0.3
            if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
            let refreshesBefore = try await server.refreshes()
            let decisions = try await withThrowingTaskGroup(of: Decision.self) { group in
                for _ in 0..<20 { group.addTask { try await client.decide(action: "checkout", resource: market) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(decisions.count == 20 && decisions.allSatisfy(\.isAllowed))
            #expect(try await server.refreshes() == refreshesBefore + 1)
            let after = try #require(store.load())
            #expect(after.accessToken != before.accessToken && after.refreshToken != before.refreshToken && after.userId == userId)

            try await client.signOut()
            #expect(await states.next() == .signedOut)
            #expect(store.load() == nil)
            #expect(try await client.decide(action: "checkout", resource: market).reason == .unauthenticated)
            let me = await thrownClientError { _ = try await client.me() }
            #expect(me?.code == GatehouseClientError.notSignedIn)
        }
    }
}
