import Crypto
import Foundation
import GRDB
import Gatehouse
import Synchronization
import Testing
import GatehouseTestSupport

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_795_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

struct Facade {
    static let root = Repository.root
    let dir: URL
    let database: AppDatabase
    let identity: IdentityService
    let gate: GatehouseService
    let clock = ManualClock()

    init(
        policySet: String, log: DecisionLogMode = .off, recording: DecisionRecording = DecisionRecording(), trust: Bool = false,
        configure: (inout IdentityConfiguration) -> Void = { _ in }
    ) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        database = try AppDatabase(path: dir.appendingPathComponent("identity.sqlite").path)
        var config = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["com.example.app"]))
        config.pin = .unsafeForTesting(rounds: 1_000)
        config.accessTokenLifetime = 3600
        configure(&config)
        let clock = self.clock
        identity = IdentityService(
            store: SQLiteStore(database), configuration: config,
            jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { clock.now })
        let loaded = PolicyCompiler.load(directory: Facade.root.appendingPathComponent("policies/\(policySet)").path)
        let policy = try #require(loaded.policy, "\(loaded.diagnostics)")
        var recording = recording
        if log != .off { recording.mode = log }
        gate = GatehouseService(policy: policy, identity: identity, recording: recording, trustCallerSubjects: trust)
    }
}

@Suite struct GatehouseServiceTests {
    @Test func theContaCasalCouple() async throws {
        let f = try Facade(policySet: "contacasal")
        // Onboarding needs no account.
        #expect(try await f.gate.decide(token: nil, action: "create_space", resource: Resource(type: "onboarding")).isAllowed)
        let owner = try await f.identity.signInAnonymously(source: .inProcess)
        let space = try await f.identity.createSpace(accessToken: owner.accessToken, name: "Casa", type: "space", inviteRole: "partner")
        let room = Resource(type: "space", id: space.resourceId)
        // An anonymous session counts as signed out to the engine.
        #expect(try await f.gate.decide(token: owner.accessToken, action: "view_dashboard", resource: room).reason == .unauthenticated)
        let ownerPIN = try await f.identity.setPIN(accessToken: owner.accessToken, pin: "4172").accessToken
        #expect(try await f.gate.decide(token: ownerPIN, action: "view_dashboard", resource: room).isAllowed)
        // The old (anonymous-level) token died with the rise in level.
        #expect(try await f.gate.decide(token: owner.accessToken, action: "view_dashboard", resource: room).reason == .unauthenticated)

        let partner = try await f.identity.signInAnonymously(source: .inProcess)
        let partnerPIN = try await f.identity.setPIN(accessToken: partner.accessToken, pin: "5817").accessToken
        #expect(try await f.gate.decide(token: partnerPIN, action: "add_expense", resource: room).reason == .notMember)
        _ = try await f.identity.joinSpace(accessToken: partnerPIN, shareCode: space.shareCode, source: .inProcess)
        #expect(try await f.gate.decide(token: partnerPIN, action: "add_expense", resource: room).isAllowed)
        // What the caller claims about members is ignored for a stored resource.
        let forged = Resource(type: "space", id: space.resourceId, ownerId: partner.userId, members: [partner.userId: "owner"])
        #expect(try await f.gate.decide(token: partnerPIN, action: "remove_partner", resource: forged).reason == .ownerOnly)

        // 16 minutes later the PIN verification is stale; a device key brings it back.
        f.clock.advance(16 * 60)
        #expect(try await f.gate.decide(token: ownerPIN, action: "view_dashboard", resource: room).reason == .stepUpRequired)
        let again = try await f.identity.verifyPIN(accessToken: ownerPIN, pin: "4172")
        let key = P256.Signing.PrivateKey()
        try await f.identity.enrollDeviceKey(accessToken: again.accessToken, deviceId: "iphone", publicKey: key.publicKey.x963Representation)
        f.clock.advance(16 * 60)
        let challenge = try await f.identity.deviceChallenge(accessToken: again.accessToken, deviceId: "iphone")
        let bio = try await f.identity.verifyDeviceSignature(accessToken: again.accessToken, deviceId: "iphone", challenge: challenge, signature: try key.signature(for: challenge).derRepresentation)
        #expect(try await f.gate.decide(token: bio.accessToken, action: "view_dashboard", resource: room).isAllowed)
        // remove_partner wants a fresh PIN, not a biometric glance.
        #expect(try await f.gate.decide(token: bio.accessToken, action: "remove_partner", resource: room).reason == .stepUpRequired)

        // Dead tokens are `unauthenticated`, never an error.
        for token in ["garbage", "gha_" + String(repeating: "A", count: 43)] {
            let d = try await f.gate.decide(token: token, action: "view_dashboard", resource: room)
            #expect(d.reason == .unauthenticated && !d.isAllowed && d.message != nil)
            // In the set's own words (contacasal speaks Portuguese), pointing at the action's sign-in requirement.
            #expect(d.message == "Desbloqueie o ContaCasal com o seu PIN.")
            #expect(d == f.gate.policy.decide(Request(subject: Subject(), action: "view_dashboard", resource: room)))
        }
        try await f.identity.signOut(accessToken: partnerPIN)
        #expect(try await f.gate.decide(token: partnerPIN, action: "add_expense", resource: room).reason == .unauthenticated)
        try await f.identity.deleteAccount(accessToken: bio.accessToken)
        let afterDeletion = try await f.gate.decide(token: bio.accessToken, action: "view_dashboard", resource: room)
        #expect(afterDeletion.reason == .unauthenticated)
        // Even for an action anyone may take, a dead token is reported, so the app signs in again.
        let onboarding = try await f.gate.decide(token: bio.accessToken, action: "create_space", resource: Resource(type: "onboarding"))
        #expect(onboarding.reason == .unauthenticated && onboarding.message == "Sign in to continue.")
    }

    /// No token, a refused token and a live one are three answers, not two (a refused token is not signed out).
    @Test func aTokensSubjectSaysSignedOutRefusedOrSignedIn() async throws {
        let f = try Facade(policySet: "contacasal")
        #expect(try await f.gate.subject(token: nil) == .signedOut)
        #expect(try await f.gate.subject(token: "garbage") == .refused)
        let user = try await f.identity.signInAnonymously(source: .inProcess)
        let pinned = try await f.identity.setPIN(accessToken: user.accessToken, pin: "4172").accessToken
        let holder = try await f.gate.subject(token: pinned)
        guard case .signedIn(let subject) = holder else {
            Issue.record("a live token answered \(holder)")
            return
        }
        #expect(subject.id == user.userId)
        #expect(holder.subject == subject)
        try await f.identity.signOut(accessToken: pinned)
        #expect(try await f.gate.subject(token: pinned) == .refused)
        #expect(TokenSubject.refused.subject == Subject() && TokenSubject.signedOut.subject == Subject())
    }

    @Test func tiersLimitsAndConsentFromTheStore() async throws {
        let f = try Facade(policySet: "research-crawler")
        let user = try await f.identity.register(username: "rita", pin: "4826", source: .inProcess)
        let app = Resource(type: "app")
        try await f.identity.incrementUserUsage(userId: user.userId, counter: "sources", by: 50)
        let free = try await f.gate.decide(token: user.accessToken, action: "add_source", resource: app)
        #expect(free.reason == .limitExceeded && free.limit == 50 && free.upgradeTo == "pro")
        let product = try #require(f.gate.policy.productTiers.first { $0.value == "pro" }?.key)
        try await f.identity.recordSubscription(userId: user.userId, productId: product, expiresAt: f.clock.now.addingTimeInterval(86400), productTiers: f.gate.policy.productTiers)
        #expect(try await f.gate.decide(token: user.accessToken, action: "add_source", resource: app).isAllowed)
        #expect(try await f.gate.decide(token: user.accessToken, action: "ai_suggestions", resource: Resource(type: "app")).isAllowed)
        // The engine applies the stored expiry.
        f.clock.advance(86400 + 60)
        let fresh = try await f.identity.signIn(username: "rita", pin: "4826", source: .inProcess)
        #expect(try await f.gate.decide(token: fresh.accessToken, action: "add_source", resource: app).reason == .limitExceeded)
        // Privacy settings arrive as attributes.
        #expect(try await f.gate.decide(token: fresh.accessToken, action: "send_analytics", resource: Resource(type: "app")).reason == .consentRequired)
        try await f.identity.setPrivacySettings(accessToken: fresh.accessToken, PrivacySettings(analytics: true))
        #expect(try await f.gate.decide(token: fresh.accessToken, action: "send_analytics", resource: Resource(type: "app")).isAllowed)
        // Project roles come from memberships.
        let project = try await f.identity.createSpace(accessToken: fresh.accessToken, name: "Thesis", type: "project", inviteRole: "commenter")
        let other = try await f.identity.register(username: "otto", pin: "3751", source: .inProcess)
        let p = Resource(type: "project", id: project.resourceId)
        #expect(try await f.gate.decide(token: other.accessToken, action: "view", resource: p).reason == .notMember)
        _ = try await f.identity.joinSpace(accessToken: other.accessToken, shareCode: project.shareCode, source: .inProcess)
        #expect(try await f.gate.decide(token: other.accessToken, action: "comment", resource: p).isAllowed)
        #expect(try await f.gate.decide(token: other.accessToken, action: "edit", resource: p).reason == .accessDenied)
        #expect(try await f.gate.decide(token: fresh.accessToken, action: "delete", resource: p).isAllowed)
    }

    @Test func decisionsAreLoggedWithThePolicyHash() async throws {
        let f = try Facade(policySet: "research-crawler", log: .denied)
        let user = try await f.identity.register(username: "lou", pin: "8624", source: .inProcess)
        _ = try await f.gate.decide(token: user.accessToken, action: "ai_suggestions", resource: Resource(type: "app"))
        _ = try await f.gate.decide(token: nil, action: "no_such_action", resource: Resource(type: "app"))
        let project = try await f.identity.createSpace(accessToken: user.accessToken, name: "P", type: "project", inviteRole: "editor")
        _ = try await f.gate.decide(token: user.accessToken, action: "view", resource: Resource(type: "project", id: project.resourceId))  // allowed: not logged
        await f.gate.flushDecisionRecords()
        // The signed-out caller's denial is not recorded: that takes `DecisionRecording.signedOut` (issue 36, N6).
        let rows = try f.database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM decisionLog ORDER BY id") }
        #expect(rows.count == 1)
        #expect(rows.allSatisfy { ($0["policyHash"] as String) == f.gate.policy.contentHash && ($0["effect"] as String) == "deny" })
        #expect(rows.map { $0["reason"] as String } == ["requires_upgrade"])
        let actor: String? = rows[0]["actor"]
        #expect(actor != nil && actor != user.userId)
        #expect(throws: DatabaseError.self) { try f.database.pool.write { db in try db.execute(sql: "DELETE FROM decisionLog") } }
    }

    @Test func aBrokenPolicyNeverReplacesAWorkingOne() async throws {
        let f = try Facade(policySet: "research-crawler")
        let before = f.gate.policy.contentHash
        let broken = f.dir.appendingPathComponent("broken")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("resources: [not, a, map".utf8).write(to: broken.appendingPathComponent("bad.yaml"))
        #expect(f.gate.reload(directory: broken.path).contains { $0.severity == .error })
        #expect(f.gate.policy.contentHash == before)
        #expect(!f.gate.reload(directory: Facade.root.appendingPathComponent("policies/contacasal").path).contains { $0.severity == .error })
        #expect(f.gate.policy.contentHash != before && f.gate.policy.name == "contacasal")
    }
}
