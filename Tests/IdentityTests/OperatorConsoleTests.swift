import Crypto
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

    /// Each session shows what its sign-in said about the device (v20): the declared name and the User-Agent's product,
    /// the device key's id once one verified the session, nothing for a sign-in that said nothing (as for the sessions
    /// from before the column). A hostile name is kept as the client said it; the page renders it as text.
    @Test(arguments: StoreKind.testable) func eachSessionShowsTheDeviceItsSignInNamed(store: StoreKind) async throws {
        let h = try await Harness(store)
        let phone = try SessionDevice(name: "iPhone15,2", userAgent: "ResearchApp/1.4.2 CFNetwork/1496.0.7 Darwin/23.5.0")
        let alice = try await h.service.register(username: "alice", pin: "482615", source: .inProcess, device: phone)
        let hostile = try SessionDevice(
            name: "<img src=x onerror=alert(1)>",
            userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.85 Safari/537.36")
        let browser = try await h.service.signIn(username: "alice", pin: "482615", source: .inProcess, device: hostile)
        let silent = try await h.service.signIn(username: "alice", pin: "482615", source: .inProcess)
        let anonymous = try await h.service.signInAnonymously(source: .inProcess, device: try SessionDevice(name: nil, userAgent: "curl/8.5.0"))

        let key = P256.Signing.PrivateKey()
        try await h.service.enrollDeviceKey(accessToken: alice.accessToken, deviceId: "kitchen-ipad", publicKey: key.publicKey.x963Representation)
        let challenge = try await h.service.deviceChallenge(accessToken: alice.accessToken, deviceId: "kitchen-ipad")
        _ = try await h.service.verifyDeviceSignature(
            accessToken: alice.accessToken, deviceId: "kitchen-ipad", challenge: challenge, signature: try key.signature(for: challenge).derRepresentation)

        let sessions = try await h.service.operatorUserPage(userId: alice.userId, operator: Self.op).sessions
        let devices = Dictionary(uniqueKeysWithValues: sessions.map { ($0.id, $0.device) })
        #expect(devices[alice.sessionId] == .some("enrolled device kitchen-ipad · iPhone15,2 · ResearchApp/1"), "\(devices)")
        #expect(devices[browser.sessionId] == .some("<img src=x onerror=alert(1)> · Chrome/131"))
        #expect(devices[silent.sessionId] == .some(nil))
        #expect(try await h.service.operatorUserPage(userId: anonymous.userId, operator: Self.op).sessions.map(\.device) == ["curl/8"])
    }

    /// The declared name: 1 to 64 printable ASCII characters (so no control, bidirectional or zero-width character), not
    /// posing as a device key's mark; refused naming the header. The User-Agent is reduced to one product, never refused.
    @Test func aDeclaredDeviceNameIsCheckedAndTheUserAgentReduced() throws {
        for bad in ["", "   ", String(repeating: "x", count: 65), "Mira\u{202E}enohp", "zero\u{200B}width", "tab\there", "new\nline", "Mirá", "Enrolled device spoof"] {
            do {
                _ = try SessionDevice(name: bad, userAgent: nil)
                Issue.record("accepted \(bad.debugDescription)")
            } catch let error as IdentityError {
                #expect(error.field == "Gatehouse-Device" && error.code == .invalidInput, "\(bad.debugDescription)")
            }
        }
        #expect(try SessionDevice(name: " Pixel 8 ", userAgent: nil).name == "Pixel 8")
        let agents: [(String, String?)] = [
            ("ResearchApp/1.4.2 CFNetwork/1496.0.7 Darwin/23.5.0", "ResearchApp/1"),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome/131"),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86", "Edg/131"),
            ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox/133"),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "Safari/18"),
            ("python-requests/2.31.0", "python-requests/2"),
            ("curl/8.5.0", "curl/8"),
            ("<script>/1", nil), ("App\u{202E}/1", nil), ("", nil), ("no product here", nil), ("(Linux/x86_64)", nil), ("/1", nil), ("App/", nil),
        ]
        for (agent, reduced) in agents {
            #expect(try SessionDevice(name: nil, userAgent: agent).agent == reduced, "\(agent)")
        }
        #expect(try SessionDevice(name: nil, userAgent: nil).stored == nil)
    }

    /// A decision record names its subject by a keyed pseudonym (`u-...`) that cannot be turned back into an id; the
    /// search finds the user through the record (both pseudonyms on one row, each indexed) and checks the match exactly.
    @Test(arguments: StoreKind.testable) func findsAUserByADecisionRecordsPseudonym(store: StoreKind) async throws {
        let h = try await Harness(store)
        let alice = try await h.service.signInAnonymously(source: .inProcess)
        let bob = try await h.service.signInAnonymously(source: .inProcess)
        let request = Request(subject: Subject(id: alice.userId), action: "ai_suggestions", resource: Resource(type: "app"))
        try await h.service.writeDecisionRecords([
            DecisionRecordDraft(request: request, effect: "deny", reason: "requires_upgrade", policyHash: "h", policyLocation: nil, fromSession: true)
        ])
        let names = try await h.service.decisionPseudonyms()
        let shown = try #require(try await h.rows(DecisionLogRow.self).first?.subject)
        #expect(shown == names.pseudonym(alice.userId))
        let found = try await h.service.findUsers(shown, operator: Self.op)
        #expect(found.map(\.id) == [alice.userId] && found.first?.matchedBy == "decisionPseudonym")
        // Bob has no record, so no record shows his pseudonym and it finds nobody; nor does one no user has.
        #expect(try await h.service.findUsers(names.pseudonym(bob.userId), operator: Self.op).isEmpty)
        #expect(try await h.service.findUsers("u-" + String(repeating: "0", count: 32), operator: Self.op).isEmpty)
        // Erased: the record keeps no subject, and the pseudonym finds nobody.
        try await h.service.deleteUser(userId: alice.userId, operator: Self.op)
        #expect(try await h.service.findUsers(shown, operator: Self.op).isEmpty)
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
