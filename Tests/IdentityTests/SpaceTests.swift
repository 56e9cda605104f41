import Foundation
import PolicyModel
import Testing

@testable import Identity

@Suite(.storeScope) struct SpaceTests {
    @Test(arguments: StoreKind.testable) func createAndJoinWithAShareCode(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let partner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        // Printed, reflected or dumped (a debugger, a log line with `dump`), the code is not shown.
        var dumped = ""
        dump(space, to: &dumped)
        for text in [String(describing: space), String(reflecting: space), dumped] {
            #expect(!text.contains(space.shareCode), "\(text)")
        }
        // Codes are case-insensitive and may be typed with separators.
        let typed = String(space.shareCode.prefix(5)).lowercased() + "-" + space.shareCode.dropFirst(5)
        let joined = try await h.service.joinSpace(accessToken: partner.accessToken, shareCode: typed, source: .inProcess)
        #expect(joined == space.resourceId)
        let facts = try await h.service.resourceFacts(resourceId: space.resourceId)
        #expect(facts.ownerId == owner.userId && facts.members == [owner.userId: "owner", partner.userId: "editor"])
        // Single-purpose: the code is spent.
        let third = try await h.service.signInAnonymously(source: .inProcess)
        #expect(await identityError { try await h.service.joinSpace(accessToken: third.accessToken, shareCode: space.shareCode, source: .inProcess) }?.code == .invalidCredentials)
        // Stored hashed.
        let codes = try await h.rows(ShareCodeRow.self).map(\.codeHash)
        #expect(codes == [SecretCoding.sha256(space.shareCode)])
    }

    @Test(arguments: StoreKind.testable) func codesExpire(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        h.clock.advance(48 * 3600 + 1)
        let partner = try await h.service.signInAnonymously(source: .inProcess)
        #expect(await identityError { try await h.service.joinSpace(accessToken: partner.accessToken, shareCode: space.shareCode, source: .inProcess) }?.field == "shareCode")
    }

    @Test(arguments: StoreKind.testable) func guessesAreRateLimited(store: StoreKind) async throws {
        let h = try await Harness(store) { $0.accessTokenLifetime = 3600 }
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        let guesser = try await h.service.signInAnonymously(source: .inProcess)
        for i in 0..<5 {
            let e = await identityError { try await h.service.joinSpace(accessToken: guesser.accessToken, shareCode: String(format: "AAAAA%05d", i), source: .inProcess) }
            #expect(e?.code == .invalidCredentials)
        }
        // Even the right code is refused until the window passes.
        let limited = await identityError { try await h.service.joinSpace(accessToken: guesser.accessToken, shareCode: space.shareCode, source: .inProcess) }
        #expect(limited?.code == .throttled && limited?.retryAfter == 15 * 60)
        h.clock.advance(15 * 60)
        _ = try await h.service.joinSpace(accessToken: guesser.accessToken, shareCode: space.shareCode, source: .inProcess)
        #expect(await identityError { try await h.service.joinSpace(accessToken: guesser.accessToken, shareCode: "not a code!", source: .inProcess) }?.code == .invalidInput)
    }

    @Test(arguments: StoreKind.testable) func onlyTheOwnerInvites(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa", inviteRole: "editor")
        let viewerCode = try await h.service.newShareCode(accessToken: owner.accessToken, resourceId: space.resourceId, role: "viewer")
        let v = try await h.service.signInAnonymously(source: .inProcess)
        _ = try await h.service.joinSpace(accessToken: v.accessToken, shareCode: viewerCode, source: .inProcess)
        #expect(try await h.service.resourceFacts(resourceId: space.resourceId).members[v.userId] == "viewer")
        #expect(await identityError { try await h.service.newShareCode(accessToken: v.accessToken, resourceId: space.resourceId) }?.code == .forbidden)
        #expect(await identityError { try await h.service.newShareCode(accessToken: owner.accessToken, resourceId: space.resourceId, role: "owner") }?.field == "role")
    }

    @Test(arguments: StoreKind.testable) func concurrentUsageIncrementsLoseNothing(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: owner.accessToken, name: "Research", type: "project", inviteRole: "editor")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { try await h.service.incrementUsage(resourceId: space.resourceId, counter: "sources") } }
            try await group.waitForAll()
        }
        #expect(try await h.service.resourceFacts(resourceId: space.resourceId).usage == ["sources": 50])
        #expect(await identityError { try await h.service.incrementUsage(resourceId: space.resourceId, counter: "sources", by: -51) }?.field == "delta")
        #expect(await identityError { try await h.service.incrementUsage(resourceId: space.resourceId, counter: "bad name") }?.field == "counter")
        #expect(await identityError { try await h.service.incrementUsage(resourceId: "nope", counter: "sources") }?.code == .notFound)
    }

    @Test(arguments: StoreKind.testable) func subjectOfASession(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await h.pinUser()
        let expiry = h.clock.now.addingTimeInterval(30 * 86400)
        try await h.service.recordSubscription(userId: s.userId, productId: "com.rwc.pro.monthly", expiresAt: expiry, productTiers: ["com.rwc.pro.monthly": "pro"])
        #expect(await identityError { try await h.service.recordSubscription(userId: s.userId, productId: "unknown", expiresAt: nil, productTiers: [:]) }?.field == "productId")
        let declared = ["customer", "driver", "partner", "admin"]
        try await h.service.setAppRoles(userId: s.userId, roles: ["driver", "customer"], declared: declared)
        #expect(await identityError { try await h.service.setAppRoles(userId: s.userId, roles: ["customer", "root"], declared: declared) }?.field == "roles[1]")
        // The roles come from the policy set: a set that declares none gives none, and the refusal writes nothing.
        let none = await identityError { try await h.service.setAppRoles(userId: s.userId, roles: ["admin"], declared: []) }
        #expect(none?.field == "roles[0]" && none?.reason.contains("declares no app roles") == true)
        try await h.service.setPrivacySettings(accessToken: s.accessToken, PrivacySettings(analytics: true, aiSuggestions: true, dataSharing: .minimal))
        let subject = try await h.service.subject(accessToken: s.accessToken)
        #expect(subject.id == s.userId && subject.tier == "pro" && subject.subscriptionExpiry == expiry)
        #expect(subject.roles == ["customer", "driver"])
        #expect(subject.auth == Authentication(method: AuthMethod.pin, verifiedAt: h.clock.now))
        #expect(subject.attributes == ["analytics": .bool(true), "crashReporting": .bool(false), "aiSuggestions": .bool(true), "dataSharing": .string("minimal")])
        #expect(subject.isSignedIn)
        // A new account shares nothing by default.
        let fresh = try await h.service.signInAnonymously(source: .inProcess)
        let anon = try await h.service.subject(accessToken: fresh.accessToken)
        #expect(anon.attributes["dataSharing"] == .string("none") && anon.tier == nil && !anon.isSignedIn)
    }
}
