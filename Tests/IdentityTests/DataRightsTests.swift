import Crypto
import Foundation
import PolicyModel
import Testing

@testable import Identity

@Suite(.storeScope) struct DataRightsTests {
    /// A user who has used every flow, and the secrets involved.
    struct Scenario {
        var owner: SessionTokens
        var access: String
        var partner: SessionTokens
        var spaceId: String
        var soloId: String
        var secrets: [String]
    }

    func scenario(_ h: Harness) async throws -> Scenario {
        let pin = "902817"
        let (token, nonce) = try await h.appleToken(sub: "apple.owner")
        let owner = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce, fullName: "Dora Dias")
        try await h.service.setUsername(accessToken: owner.accessToken, username: "dora")
        _ = try await h.service.setPIN(accessToken: owner.accessToken, pin: pin)
        // A PIN set on an Apple account does not vouch for itself: it is verified once before enrolment.
        let up = try await h.service.verifyPIN(accessToken: owner.accessToken, pin: pin)
        let key = P256.Signing.PrivateKey()
        try await h.service.enrollDeviceKey(accessToken: up.accessToken, deviceId: "pixel", publicKey: key.publicKey.x963Representation)
        let challenge = try await h.service.deviceChallenge(accessToken: up.accessToken, deviceId: "pixel")
        _ = try await h.service.verifyDeviceSignature(accessToken: up.accessToken, deviceId: "pixel", challenge: challenge, signature: try key.signature(for: challenge).derRepresentation)
        let space = try await h.service.createSpace(accessToken: up.accessToken, name: "Casa", inviteRole: "editor")
        let solo = try await h.service.createSpace(accessToken: up.accessToken, name: "Notes", type: "project", inviteRole: "editor")
        try await h.service.incrementUsage(resourceId: solo.resourceId, counter: "sources", by: 7)
        let partner = try await h.service.signInAnonymously(source: .inProcess)
        _ = try await h.service.joinSpace(accessToken: partner.accessToken, shareCode: space.shareCode, source: .inProcess)
        try await h.service.recordSubscription(userId: owner.userId, productId: "pro.yearly", expiresAt: h.clock.now.addingTimeInterval(86400), productTiers: ["pro.yearly": "pro"])
        try await h.service.setAppRoles(userId: owner.userId, roles: ["customer"], declared: ["customer"])
        try await h.service.setPrivacySettings(accessToken: up.accessToken, PrivacySettings(crashReporting: true, dataSharing: .standard))
        _ = await identityError { try await h.service.signIn(username: "dora", pin: "111111", source: .inProcess) }
        let refreshed = try await h.service.refresh(refreshToken: owner.refreshToken)
        return Scenario(
            owner: owner, access: refreshed.accessToken, partner: partner, spaceId: space.resourceId, soloId: solo.resourceId,
            secrets: [pin, "111111", owner.accessToken, owner.refreshToken, up.accessToken, refreshed.accessToken, refreshed.refreshToken, nonce, token, space.shareCode, solo.shareCode, SecretCoding.hex(challenge), challenge.base64EncodedString()])
    }

    @Test(arguments: StoreKind.testable) func exportIsOneJSONDocumentOfEverythingWithoutSecrets(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await scenario(h)
        let data = try await h.service.exportData(accessToken: s.access)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(json.keys) == ["exportedAt", "account", "appRoles", "appleIds", "pin", "sessions", "devices", "memberships", "subscription", "appStorePurchases", "usage", "privacy", "securityEvents", "decisions"])
        let account = try #require(json["account"] as? [String: Any])
        #expect(account["displayName"] as? String == "Dora Dias" && account["username"] as? String == "dora")
        #expect((json["memberships"] as? [Any])?.count == 2 && (json["devices"] as? [Any])?.count == 1)
        #expect((json["appleIds"] as? [[String: Any]])?.first?["appleUserId"] as? String == "apple.owner")
        let events = try #require(json["securityEvents"] as? [[String: Any]])
        #expect(events.contains { $0["kind"] as? String == "device_verify" } && events.contains { $0["kind"] as? String == "data_export" })
        let text = String(decoding: data, as: UTF8.self)
        for secret in s.secrets { #expect(!text.contains(secret)) }
        let cred = try await h.pinCredentials()
        for c in cred { #expect(!text.contains(c.salt.base64EncodedString()) && !text.contains(c.hash.base64EncodedString())) }
    }

    @Test(arguments: StoreKind.testable) func deletionRemovesEverythingAndHandsSharedSpacesOver(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await scenario(h)
        let auditBefore = try await h.auditRows().count
        try await h.service.deleteAccount(accessToken: s.access)
        // The deleted user's tokens are just unknown now.
        #expect(await identityError { try await h.service.validate(accessToken: s.access) }?.code == .unauthenticated)
        #expect(await identityError { try await h.service.subject(accessToken: s.access) }?.code == .unauthenticated)
        #expect(await identityError { try await h.service.refresh(refreshToken: s.owner.refreshToken) }?.code == .unauthenticated)
        // The shared space goes to the partner; the solo one is gone with its counters.
        let facts = try await h.service.resourceFacts(resourceId: s.spaceId)
        #expect(facts.ownerId == s.partner.userId && facts.members == [s.partner.userId: "owner"])
        #expect(await identityError { try await h.service.resourceFacts(resourceId: s.soloId) }?.code == .notFound)
        // No row anywhere names the user, their Apple id or their username.
        let dump = try await h.dumpAllTables()
        for needle in [s.owner.userId, "apple.owner", "dora", "Dora Dias"] { #expect(!dump.contains(needle), "\(needle)") }
        // The audit log kept every row, and the deletion, under a pseudonym nothing maps back.
        let rows = try await h.auditRows()
        #expect(rows.count == auditBefore + 1)
        let deletion = try #require(rows.last)
        #expect(deletion.kind == "account_deleted" && deletion.reason == "spaces_handed_over:1,spaces_deleted:1")
        let actor = try #require(deletion.actor)
        #expect(try await h.rows(UserRow.self).allSatisfy { $0.pseudonym != actor })
    }

    @Test(arguments: StoreKind.testable) func secretsNeverReachErrorsDescriptionsTheAuditLogOrTheFile(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await scenario(h)
        var texts: [String] = [String(describing: s.owner), String(reflecting: s.owner)]
        var dumped = ""
        dump(s.owner, to: &dumped)
        texts.append(dumped)
        // Errors for bad secrets say which field, never the value.
        h.clock.advance(30)  // past the refresh grace window: reusing the first refresh token is a reuse
        let failures: [IdentityError?] = [
            await identityError { try await h.service.signIn(username: "dora", pin: "902818", source: .inProcess) },
            await identityError { try await h.service.validate(accessToken: s.owner.accessToken + "x") },
            await identityError { try await h.service.refresh(refreshToken: s.owner.refreshToken) },
            await identityError { try await h.service.joinSpace(accessToken: s.access, shareCode: "ZZZZZZZZZZ", source: .inProcess) },
            await identityError { try await h.service.signInWithApple(identityToken: s.secrets[8], rawNonce: s.secrets[7]) },
        ]
        for e in failures { texts.append(String(describing: try #require(e))) }
        texts += try await h.auditRows().map { "\($0)" }
        for text in texts {
            for secret in s.secrets + ["902818", "ZZZZZZZZZZ"] { #expect(!text.contains(secret), "\(text)") }
        }
        // Nor the database (SQLite: the file and its WAL, byte for byte; PostgreSQL: every row of every table).
        switch store {
        case .sqlite:
            for file in try FileManager.default.contentsOfDirectory(at: h.dir, includingPropertiesForKeys: nil) {
                let bytes = try Data(contentsOf: file)
                for secret in s.secrets { #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file.lastPathComponent)") }
            }
        case .postgres:
            let dump = try await h.dumpAllTables()
            for secret in s.secrets { #expect(!dump.contains(secret)) }
        }
    }

    /// Runs every flow on one database and prints what the audit log holds (kind, method, outcome, reason).
    @Test(arguments: StoreKind.testable) func auditLogAfterEveryFlow(store: StoreKind) async throws {
        let h = try await Harness(store)
        let s = try await scenario(h)
        _ = try await h.service.exportData(accessToken: s.access)
        let (token, nonce) = try await h.appleToken(sub: "apple.other")
        _ = try await h.service.signInWithApple(identityToken: token, rawNonce: nonce)
        try await h.service.updateAppleCredentialState(appleUserId: "apple.other", state: .revoked, operator: .testOperator)
        try await h.service.signOutEverywhere(accessToken: s.partner.accessToken)
        try await h.service.deleteAccount(accessToken: s.access)
        let rows = try await h.auditRows()
        var tally: [String: Int] = [:]
        for r in rows { tally["\(r.kind) \(r.method ?? "-") \(r.outcome) \(r.reason ?? "-")", default: 0] += 1 }
        print("audit log after every flow (\(rows.count) rows):")
        for (line, n) in tally.sorted(by: { $0.key < $1.key }) { print("  \(n)x \(line)") }
        #expect(Set(rows.map(\.kind)).isSuperset(of: ["sign_up", "sign_in", "pin_set", "device_enrolled", "device_verify", "space_created", "space_joined", "data_export", "account_deleted", "credential_state_changed", "sessions_revoked", "sign_out_everywhere"]))
    }
}
