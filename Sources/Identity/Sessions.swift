import Crypto
import Foundation
import PolicyModel

/// A live session as validation finds it.
public struct VerifiedSession: Sendable, Hashable {
    /// The session's id.
    public var sessionId: String
    /// The signed-in user's id.
    public var userId: String
    /// The method of the session's latest verification (`anonymous`, `apple`, `pin`, `biometric`).
    public var authMethod: String
    /// The highest assurance the session reached: 0 anonymous, 1 Apple or password, 2 PIN or device key.
    public var authLevel: Int
    /// When that verification happened (a policy's `maxAge` is measured from it).
    public var verifiedAt: Date
    /// When the session ends however active it is (`IdentityConfiguration.absoluteLifetime` after sign-in).
    public var expiresAt: Date
}

extension IdentityService {
    // MARK: - Issuing

    /// Creates a session with a fresh access and refresh token for `userId`, noting what the sign-in said of its `device`.
    func createSession(_ tx: any IdentityTransaction, userId: String, method: String, device: SessionDevice? = nil, at t: Date) async throws -> SessionTokens {
        let access = TokenKind.access.generate(random)
        let refresh = TokenKind.refresh.generate(random)
        let session = SessionRow(
            id: newId(), userId: userId, accessTokenHash: SecretCoding.sha256(access),
            accessExpiresAt: t.addingTimeInterval(configuration.accessTokenLifetime), authMethod: method,
            authLevel: AuthLevel.of(method), verifiedAt: t, createdAt: t, lastSeenAt: t,
            expiresAt: t.addingTimeInterval(configuration.absoluteLifetime), revokedAt: nil, revokedReason: nil,
            refreshKey: Data(random.bytes(32)), device: device?.stored)
        try await tx.insert(session)
        try await tx.insert(RefreshTokenRow(tokenHash: SecretCoding.sha256(refresh), sessionId: session.id, createdAt: t, rotatedAt: nil, successorHash: nil))
        return SessionTokens(sessionId: session.id, userId: userId, accessToken: access, accessExpiresAt: session.accessExpiresAt, refreshToken: refresh)
    }

    /// Records a verification on a session; a rise in auth level replaces the access token.
    func stepUp(_ tx: any IdentityTransaction, _ session: SessionRow, method: String, presented: String, at t: Date) async throws -> StepUp {
        var s = session
        let level = AuthLevel.of(method)
        var token = presented
        let rotated = level > s.authLevel
        if rotated {
            token = TokenKind.access.generate(random)
            s.previousAccessTokenHash = s.accessTokenHash
            s.accessTokenHash = SecretCoding.sha256(token)
            s.accessExpiresAt = t.addingTimeInterval(configuration.accessTokenLifetime)
        }
        s.authMethod = method
        s.authLevel = max(level, s.authLevel)
        s.verifiedAt = t
        s.lastSeenAt = t
        try await tx.update(s)
        return StepUp(accessToken: token, rotated: rotated, method: method)
    }

    // MARK: - Re-verification for account changes

    /// Whether the account has a credential besides its sessions: a PIN, an Apple id or a device key.
    func hasCredential(_ tx: any IdentityTransaction, _ userId: String) async throws -> Bool {
        if try await tx.fetchOne(PINCredentialRow.self, "userId", .text(userId)) != nil { return true }
        if try await !tx.fetchAll(AppleIdentityRow.self, "userId", .text(userId)).isEmpty { return true }
        return try await !tx.fetchAll(DeviceKeyRow.self, "userId", .text(userId)).isEmpty
    }

    /// Throws `forbidden` unless the session was verified within `reverificationWindow` by a
    /// credential the account already had (`methods`, when given, narrows which).
    ///
    /// An account with no credential at all (anonymous) has nothing to verify against: its live
    /// session is the only proof there is. `verifiedAt` only ever moves on a verification by an
    /// existing credential: linking Apple or setting a PIN on an account that has a credential
    /// leaves it where it was, so a new credential never vouches for itself.
    func requireRecentVerification(
        _ tx: any IdentityTransaction, _ s: SessionRow, at t: Date, methods: Set<String>? = nil, action: String
    ) async throws {
        if methods == nil, try await !hasCredential(tx, s.userId) { return }
        let allowed = methods ?? [AuthMethod.pin, AuthMethod.biometric, AuthMethod.apple]
        guard allowed.contains(s.authMethod), t.timeIntervalSince(s.verifiedAt) <= configuration.reverificationWindow else {
            let names = allowed.sorted().map { $0 == AuthMethod.biometric ? "device key" : $0 == AuthMethod.apple ? "Sign in with Apple" : "PIN" }
            throw IdentityError(
                .forbidden, field: "accessToken",
                "\(action) needs a verification (\(names.joined(separator: ", "))) in the last \(Int(configuration.reverificationWindow / 60)) minutes")
        }
    }

    /// Revokes every other live session of the user (a credential changed: ASVS 3.3.3); returns how many.
    @discardableResult
    func revokeOtherSessions(_ tx: any IdentityTransaction, of userId: String, except sessionId: String, reason: String, at t: Date) async throws -> Int {
        var count = 0
        for var other in try await tx.fetchAll(SessionRow.self, "userId", .text(userId)) where other.revokedAt == nil && other.id != sessionId {
            other.revokedAt = t
            other.revokedReason = reason
            try await tx.update(other)
            count += 1
        }
        return count
    }

    // MARK: - Validating

    func isLive(_ s: some SessionLifetime, at t: Date) -> Bool {
        s.revokedAt == nil && t < s.expiresAt && t < s.accessExpiresAt && t.timeIntervalSince(s.lastSeenAt) <= configuration.idleTimeout
    }

    /// The live session whose access token hashes to `hash`, inside a transaction; nil when there is none or it is
    /// not live at `t`. The one place a session is looked up by its access token.
    func liveSession(_ tx: any IdentityTransaction, accessTokenHash hash: Data, at t: Date) async throws -> SessionRow? {
        guard let s = try await tx.fetchOne(SessionRow.self, "accessTokenHash", .blob(hash)), isLive(s, at: t) else { return nil }
        return s
    }

    /// The live session of an access token inside a transaction, or `unauthenticated`.
    func liveSession(_ tx: any IdentityTransaction, _ accessToken: String, at t: Date) async throws -> SessionRow {
        guard let hash = TokenKind.access.hash(of: accessToken), let s = try await liveSession(tx, accessTokenHash: hash, at: t)
        else { throw IdentityError.signedOut }
        return s
    }

    /// Checks an access token and marks the session active; unknown, expired, idle or revoked tokens throw `unauthenticated`.
    public func validate(accessToken: String) async throws -> VerifiedSession {
        guard let hash = TokenKind.access.hash(of: accessToken) else { throw IdentityError.signedOut }
        let t = now()
        let found = try await store.readOne { tx in try await self.liveSession(tx, accessTokenHash: hash, at: t) }
        guard var s = found else { throw IdentityError.signedOut }
        if needsSeen(s, at: t) { s = try await markSeen(accessTokenHash: hash, at: t) }
        return VerifiedSession(sessionId: s.id, userId: s.userId, authMethod: s.authMethod, authLevel: s.authLevel, verifiedAt: s.verifiedAt, expiresAt: s.expiresAt)
    }

    /// Whether a live session's `lastSeenAt` is older than `lastSeenGranularity` at `t` (and so needs a write).
    func needsSeen(_ s: some SessionLifetime, at t: Date) -> Bool {
        t.timeIntervalSince(s.lastSeenAt) >= configuration.lastSeenGranularity
    }

    /// Marks the session of an access token seen at `t`, in its own write; `unauthenticated` if it is no longer live.
    func markSeen(accessTokenHash hash: Data, at t: Date) async throws -> SessionRow {
        try await store.write { tx in
            guard var current = try await self.liveSession(tx, accessTokenHash: hash, at: t) else { throw IdentityError.signedOut }
            if self.needsSeen(current, at: t) {
                current.lastSeenAt = t
                try await tx.update(current)
            }
            return current
        }
    }

    // MARK: - Refreshing

    /// The successor refresh token and access token of a refresh token: HMAC-SHA256 keyed with the
    /// session's random `refreshKey` (which never leaves the server) over the presented token, so
    /// racing refreshes within the grace window get the same answer without storing it, and a copied
    /// refresh token alone predicts nothing.
    static func successors(of refreshToken: String, sessionKey: Data) -> (refresh: String, access: String) {
        let key = SymmetricKey(data: sessionKey)
        let r = HMAC<SHA256>.authenticationCode(for: Data(("gatehouse.refresh.successor|" + refreshToken).utf8), using: key)
        let a = HMAC<SHA256>.authenticationCode(for: Data(("gatehouse.refresh.access|" + refreshToken).utf8), using: key)
        return (TokenKind.refresh.rawValue + SecretCoding.base64URL(r), TokenKind.access.rawValue + SecretCoding.base64URL(a))
    }

    /// Exchanges a refresh token for a new access and refresh token.
    ///
    /// A refresh token works once. Presenting it again within `refreshGracePeriod` of its rotation,
    /// while its successor is unused, returns that same successor (a client's racing refreshes);
    /// any other reuse revokes the whole session (the token family) and throws `unauthenticated`.
    public func refresh(refreshToken: String) async throws -> SessionTokens {
        guard let hash = TokenKind.refresh.hash(of: refreshToken) else {
            throw IdentityError(.unauthenticated, field: "refreshToken", "unknown refresh token")
        }
        let t = now()
        let config = configuration
        return try await commit { tx in
            let unknown = IdentityError(.unauthenticated, field: "refreshToken", "unknown, expired or revoked refresh token")
            guard var row = try await tx.fetchOne(RefreshTokenRow.self, "tokenHash", .blob(hash)),
                var session = try await tx.fetchOne(SessionRow.self, "id", .text(row.sessionId)),
                session.revokedAt == nil, t < session.expiresAt, t.timeIntervalSince(session.lastSeenAt) <= config.idleTimeout,
                let sessionKey = session.refreshKey, sessionKey.count == 32
            else { return .failure(unknown) }
            let (nextRefresh, nextAccess) = IdentityService.successors(of: refreshToken, sessionKey: sessionKey)
            let tokens = SessionTokens(
                sessionId: session.id, userId: session.userId, accessToken: nextAccess,
                accessExpiresAt: t.addingTimeInterval(config.accessTokenLifetime), refreshToken: nextRefresh)
            if let rotatedAt = row.rotatedAt {
                if t.timeIntervalSince(rotatedAt) <= config.refreshGracePeriod, let successorHash = row.successorHash,
                    let successor = try await tx.fetchOne(RefreshTokenRow.self, "tokenHash", .blob(successorHash)), successor.rotatedAt == nil
                {
                    return .success(
                        SessionTokens(sessionId: session.id, userId: session.userId, accessToken: nextAccess, accessExpiresAt: session.accessExpiresAt, refreshToken: nextRefresh))
                }
                session.revokedAt = t
                session.revokedReason = "refresh_token_reuse"
                try await tx.update(session)
                try await self.audit(tx, .refreshTokenReuse, outcome: .failure, reason: "family_revoked", user: try? self.user(tx, session.userId), at: t)
                return .failure(IdentityError(.unauthenticated, field: "refreshToken", "already used; the session is revoked"))
            }
            let successorHash = SecretCoding.sha256(nextRefresh)
            row.rotatedAt = t
            row.successorHash = successorHash
            try await tx.update(row)
            try await tx.insert(RefreshTokenRow(tokenHash: successorHash, sessionId: session.id, createdAt: t, rotatedAt: nil, successorHash: nil))
            session.previousAccessTokenHash = session.accessTokenHash
            session.accessTokenHash = SecretCoding.sha256(nextAccess)
            session.accessExpiresAt = tokens.accessExpiresAt
            session.lastSeenAt = t
            try await tx.update(session)
            return .success(tokens)
        }
    }

    // MARK: - Ending

    /// Revokes the session of this access token, and with it every token the session holds.
    ///
    /// The access token a refresh (or step-up) has just replaced still signs its session out: a sign-out
    /// that races a refresh of the same session ends the session the refresh continued, so the new tokens
    /// die with it. That token does nothing else.
    public func signOut(accessToken: String) async throws {
        let t = now()
        guard let hash = TokenKind.access.hash(of: accessToken) else { throw IdentityError.signedOut }
        try await store.write { tx in
            var found = try await self.liveSession(tx, accessTokenHash: hash, at: t)
            if found == nil, let replaced = try await tx.fetchOne(SessionRow.self, "previousAccessTokenHash", .blob(hash)), self.isLive(replaced, at: t) {
                found = replaced
            }
            guard var s = found else { throw IdentityError.signedOut }
            s.revokedAt = t
            s.revokedReason = "sign_out"
            try await tx.update(s)
            try await self.audit(tx, .signOut, outcome: .success, user: try await self.user(tx, s.userId), at: t)
        }
    }

    /// Revokes every session of the user signed in with this access token.
    public func signOutEverywhere(accessToken: String) async throws {
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            let count = try await self.revokeSessions(tx, of: s.userId, reason: "sign_out_everywhere", at: t)
            try await self.audit(tx, .signOutEverywhere, outcome: .success, reason: "sessions:\(count)", user: try await self.user(tx, s.userId), at: t)
        }
    }

    /// Marks every unrevoked session of a user revoked; returns how many.
    @discardableResult
    func revokeSessions(_ tx: any IdentityTransaction, of userId: String, reason: String, at t: Date) async throws -> Int {
        var count = 0
        for var s in try await tx.fetchAll(SessionRow.self, "userId", .text(userId)) where s.revokedAt == nil {
            s.revokedAt = t
            s.revokedReason = reason
            try await tx.update(s)
            count += 1
        }
        return count
    }

    // MARK: - Housekeeping

    /// How long failures under an unknown username are remembered after the last one.
    static let unknownThrottleMemory: TimeInterval = 180 * 86400

    /// Deletes what can no longer be used: expired nonces, challenges and share codes, sessions past
    /// their absolute lifetime (with their refresh tokens), stale guess counters, and failures under
    /// unknown usernames 180 days after the last one. Run it periodically.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        let t = now()
        let a = configuration.abuse
        let window = [configuration.shareCodeGuessWindow, a.sourcePINWindow, a.usernameProbeWindow, a.sourceShareCodeWindow, a.alarmWindow].max()!
        return try await store.write { tx in
            try await tx.deleteAll(AppleNonceRow.self, "expiresAt", before: t)
                + tx.deleteAll(DeviceChallengeRow.self, "expiresAt", before: t)
                + tx.deleteAll(ShareCodeRow.self, "expiresAt", before: t)
                + tx.deleteAll(SessionRow.self, "expiresAt", before: t)
                + tx.deleteAll(GuessLimitRow.self, "windowStart", before: t.addingTimeInterval(-window))
                + tx.deleteAll(PINThrottleRow.self, "lastFailureAt", before: t.addingTimeInterval(-Self.unknownThrottleMemory))
        }
    }
}
