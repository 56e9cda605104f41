import Crypto
import Foundation
import PolicyModel

/// The identity layer's entry points: accounts, sign-in, verification, sessions, spaces, privacy.
///
/// Every method validates its input and throws `IdentityError` naming the field at fault. Work that
/// changes more than one row runs in one store transaction; secrets never reach the store in the clear.
public final class IdentityService: Sendable {
    /// Where the service keeps its data; flows run in its transactions.
    package let store: any IdentityStore
    /// Limits, KDF settings, Apple client ids and operator token digests, fixed at start.
    public let configuration: IdentityConfiguration
    /// Verifies Sign in with Apple identity tokens against Apple's keys (RS256, exact `kid`, claims checked).
    public let appleVerifier: AppleTokenVerifier
    /// Verifies App Store signed transactions and notifications (ES256, x5c chain to a trusted root, markers).
    package let appStoreVerifier: AppStoreSignedDataVerifier
    let now: Now
    let random: any RandomSource
    /// Security event counters since start, for the server's metrics.
    public let counters = SecurityCounters()
    /// Every committed write that changed a decision fact (a session, a subject's tier, roles or privacy, a usage
    /// counter, a resource's members), told before the write returns: what a cache of decision facts invalidates by.
    public let factChanges: FactChanges
    /// The deployment's decision-record pseudonym key, read from the store once (`decisionPseudonyms()`).
    let decisionKeys = DecisionKeyCache()

    /// A service over any store of this package (SQLite, PostgreSQL, or a test double).
    package init(
        store: any IdentityStore, configuration: IdentityConfiguration, jwksFetcher: any JWKSFetcher,
        now: @escaping Now = { Date() }, random: any RandomSource = SystemRandomSource()
    ) {
        let changes = FactChanges()
        self.factChanges = changes
        self.store = FactRecordingStore(base: store, changes: changes)
        (store as? any FactChangeRelay)?.relay(into: changes)
        self.configuration = configuration
        self.now = now
        self.random = random
        let keys = AppleKeyCache(fetcher: jwksFetcher, configuration: configuration.apple, now: now)
        self.appleVerifier = AppleTokenVerifier(configuration: configuration.apple, keys: keys, now: now)
        self.appStoreVerifier = AppStoreSignedDataVerifier(configuration: configuration.appStore)
    }

    /// A service over a SQLite store: the embedded default, one file that one process writes.
    ///
    /// - Parameters:
    ///   - store: the store, over an `AppDatabase` already opened and migrated.
    ///   - configuration: limits, KDF cost, Apple client ids, operator token digests.
    ///   - jwksFetcher: where Apple's signing keys come from (`URLJWKSFetcher.apple`, or a file in tests).
    ///   - now: the clock every flow judges expiry, throttling and freshness by.
    ///   - random: the source of tokens, salts, challenges and ids.
    public convenience init(
        store: SQLiteStore, configuration: IdentityConfiguration, jwksFetcher: any JWKSFetcher,
        now: @escaping Now = { Date() }, random: any RandomSource = SystemRandomSource()
    ) {
        self.init(store: store as any IdentityStore, configuration: configuration, jwksFetcher: jwksFetcher, now: now, random: random)
    }

    /// The clock the service judges time by; the facade passes it to the engine as `context.now`.
    public var clock: Now { now }

    /// The longest string a log row keeps of a caller-supplied value (UTF-8 bytes); longer ones are cut.
    public static let maxLoggedLength = 128

    /// Whether `text` holds U+0000: `memchr` over its UTF-8 where the string is contiguous (a native one), byte by
    /// byte otherwise. The generic `utf8.contains(0)` stepped an iterator a byte at a time: about 550 instructions for a
    /// policy hash, six times a decision record (callgrind).
    static func holdsNUL(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        } ?? text.utf8.contains(0)
    }

    /// `text` cut to at most `maxLoggedLength` UTF-8 bytes on a character boundary, each U+0000 written as U+FFFD:
    /// PostgreSQL's text takes no NUL, and a row holding one would fail the batch it is written in (every record in it
    /// dropped), while SQLite's text reads back cut at it.
    static func bounded(_ text: String) -> String {
        var text = text
        if holdsNUL(text) {
            var replaced = String.UnicodeScalarView()
            for scalar in text.unicodeScalars { replaced.append(scalar.value == 0 ? "\u{FFFD}" : scalar) }
            text = String(replaced)
        }
        guard text.utf8.count > maxLoggedLength else { return text }
        var out = ""
        for c in text {
            if out.utf8.count + String(c).utf8.count > maxLoggedLength - 3 { break }
            out.append(c)
        }
        return out + "..."
    }

    /// Appends one decision to the decision log, recording the user by pseudonym only. Strings the
    /// caller chose (action, resource type and id) are cut to `maxLoggedLength` bytes.
    public func logDecision(
        userId: String?, action: String, resourceType: String, resourceId: String?, effect: String, reason: String,
        policyHash: String, policyLocation: String?, at: Date? = nil
    ) async throws {
        let t = at ?? now()
        let row = DecisionLogRow(
            id: nil, at: t, actor: nil, action: Self.bounded(action), resourceType: Self.bounded(resourceType), resourceId: resourceId.map(Self.bounded),
            effect: Self.bounded(effect), reason: Self.bounded(reason), policyHash: Self.bounded(policyHash), policyLocation: policyLocation.map(Self.bounded))
        try await store.write { tx in
            var row = row
            if let userId { row.actor = try await tx.fetchOne(UserRow.self, "id", .text(userId))?.pseudonym }
            try await tx.insert(row)
        }
    }

    /// Runs a write whose outcome may be a refusal that must still commit (a counted failure, a revocation).
    func commit<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> Result<T, IdentityError>)
        async throws -> T
    {
        try await store.write(body).get()
    }

    /// Throws `forbidden` unless `credential` is one of the configured operator tokens (constant-time).
    func authorizeOperator(_ credential: OperatorCredential) throws(IdentityError) {
        let digest = SecretCoding.sha256(credential.token)
        var match = false
        for known in configuration.operatorTokenDigests { match = SecretCoding.constantTimeEqual(known, digest) || match }
        guard match else { throw IdentityError(.forbidden, field: "operator", "not an operator credential") }
    }

    func newId() -> String { UUID().uuidString.lowercased() }

    func audit(
        _ tx: any IdentityTransaction, _ kind: AuditKind, method: String? = nil, outcome: AuditOutcome,
        reason: String? = nil, user: UserRow? = nil, at t: Date, attempt: String? = nil
    ) async throws {
        try await tx.append(
            AuditEventRow(at: t, kind: kind.rawValue, method: method, outcome: outcome.rawValue, reason: reason, actor: user?.pseudonym, attempt: attempt))
    }

    func user(_ tx: any IdentityTransaction, _ id: String) async throws -> UserRow {
        guard let user = try await tx.fetchOne(UserRow.self, "id", .text(id)) else { throw IdentityError(.notFound, field: "userId", "no such user") }
        return user
    }

    /// Inserts a user with secure-by-default privacy settings (nothing shared).
    func insertUser(_ tx: any IdentityTransaction, username: String? = nil, displayName: String? = nil, email: String? = nil, privateRelay: Bool = false, at t: Date) async throws -> UserRow {
        let user = UserRow(
            id: newId(), pseudonym: "p-" + SecretCoding.hex(random.bytes(12)), username: username, displayName: displayName,
            email: email, isPrivateRelayEmail: privateRelay, createdAt: t)
        try await tx.insert(user)
        try await tx.insert(PrivacySettingsRow(userId: user.id, analytics: false, crashReporting: false, aiSuggestions: false, dataSharing: DataSharing.none.rawValue, updatedAt: t))
        return user
    }
}

/// Assurance of each sign-in method; a verification that raises it gets a new access token.
enum AuthLevel {
    static func of(_ method: String) -> Int {
        switch method {
        case AuthMethod.pin, AuthMethod.biometric: 2
        case AuthMethod.apple, AuthMethod.password: 1
        default: 0
        }
    }
}

/// What the audit log records; a fixed vocabulary, so no free text can carry a secret. Stored as the case name in
/// snake case (`sign_up`, `refresh_token_reuse`); VocabularyTests pins every name.
package enum AuditKind: SpelledCases, Sendable {
    package static let spelling = CaseSpelling.snake

    case signUp, signIn, signOut, signOutEverywhere, sessionsRevoked, refreshTokenReuse
    case pinVerify, pinLockout, pinSet, pinChanged, pinReset, pinRehashed, pinUnlocked, failureRateAlarm
    case deviceEnrolled, deviceVerify, deviceLocked
    case appleLinked, appleUnlinked, appleNotification, credentialStateChanged, usernameSet
    case spaceCreated, spaceJoined, shareCodeRejected
    case subscriptionChanged, appStorePurchase, appStoreNotification
    case rolesChanged, privacyChanged, dataExport, accountDeleted, logsExpired
}

package enum AuditOutcome: String, Sendable {
    case success, failure
    /// A PIN attempt counted and about to be checked (reason `pin_checked`), written with its reservation; the
    /// rows of the same `attempt` say how it ended, and without them its outcome was not recorded.
    case pending
}
