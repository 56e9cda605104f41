import Foundation
import PolicyModel

extension IdentityService {
    static func validateUsername(_ username: String) throws(IdentityError) {
        let ok = (3...32).contains(username.utf8.count) && username.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F || $0 == 0x2E || $0 == 0x2D
        }
        guard ok else { throw .invalid("username", "must be 3 to 32 letters, digits, '.', '_' or '-'") }
    }

    /// Creates an account with a username and PIN and signs it in at the `pin` level.
    public func register(username: String, pin: String) async throws -> SessionTokens {
        try Self.validateUsername(username)
        try PINHasher.validate(pin)
        let t = now()
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = PINHasher.derive(pin, salt: salt, rounds: policy.rounds)
        return try await store.write { tx in
            if try tx.fetchOne(UserRow.self, "username", .text(username)) != nil {
                throw IdentityError(.conflict, field: "username", "is taken")
            }
            let user = try self.insertUser(tx, username: username, at: t)
            try tx.insert(PINCredentialRow(userId: user.id, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            let tokens = try self.createSession(tx, userId: user.id, method: AuthMethod.pin, at: t)
            try self.audit(tx, .signUp, method: AuthMethod.pin, outcome: .success, user: user, at: t)
            return tokens
        }
    }

    /// Signs in with username and PIN, subject to the throttling schedule and lockout.
    public func signIn(username: String, pin: String) async throws -> SessionTokens {
        try Self.validateUsername(username)
        try PINHasher.validate(pin)
        return try await checkPIN(pin, kind: .signIn, locate: { tx in
            try tx.fetchOne(UserRow.self, "username", .text(username))
        }, onSuccess: { tx, user, t in
            try self.createSession(tx, userId: user.id, method: AuthMethod.pin, at: t)
        })
    }

    /// Verifies the signed-in user's PIN on this session (step-up to the `pin` level).
    public func verifyPIN(accessToken: String, pin: String) async throws -> StepUp {
        try PINHasher.validate(pin)
        let userId = try await validate(accessToken: accessToken).userId
        return try await checkPIN(pin, kind: .pinVerify, locate: { tx in try tx.fetchOne(UserRow.self, "id", .text(userId)) }, onSuccess: { tx, _, t in
            try self.stepUp(tx, try self.liveSession(tx, accessToken, at: t), method: AuthMethod.pin, presented: accessToken, at: t)
        })
    }

    /// Sets the first PIN of an account that has none (e.g. after anonymous sign-in).
    ///
    /// An account with another credential (an Apple id, a device key) needs a verification by it in
    /// the last `reverificationWindow`, and the session keeps its verification: a new PIN does not
    /// vouch for itself. An account with no credential at all is raised to the `pin` level. Other
    /// sessions of the account end.
    public func setPIN(accessToken: String, pin: String) async throws -> StepUp {
        try PINHasher.validate(pin)
        // The session is checked before the KDF, so a caller without one costs no KDF time.
        _ = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = PINHasher.derive(pin, salt: salt, rounds: policy.rounds)
        let t = now()
        return try await store.write { tx in
            let s = try self.liveSession(tx, accessToken, at: t)
            if try tx.fetchOne(PINCredentialRow.self, "userId", .text(s.userId)) != nil {
                throw IdentityError(.conflict, field: "pin", "already set; change it with the current PIN")
            }
            let hadCredential = try self.hasCredential(tx, s.userId)
            try self.requireRecentVerification(tx, s, at: t, action: "setting a PIN")
            try tx.insert(PINCredentialRow(userId: s.userId, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            try self.audit(tx, .pinSet, outcome: .success, user: try self.user(tx, s.userId), at: t)
            if hadCredential { return StepUp(accessToken: accessToken, rotated: false, method: s.authMethod) }
            return try self.stepUp(tx, s, method: AuthMethod.pin, presented: accessToken, at: t)
        }
    }

    /// Replaces the PIN after checking the current one (a wrong current PIN counts as a failure).
    /// Other sessions of the account end.
    public func changePIN(accessToken: String, currentPIN: String, newPIN: String) async throws {
        try PINHasher.validate(currentPIN, field: "currentPIN")
        try PINHasher.validate(newPIN, field: "newPIN")
        let session = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = PINHasher.derive(newPIN, salt: salt, rounds: policy.rounds)
        _ = try await checkPIN(currentPIN, kind: .pinVerify, field: "currentPIN", locate: { tx in try tx.fetchOne(UserRow.self, "id", .text(session.userId)) }, onSuccess: { tx, user, t in
            try tx.upsert(PINCredentialRow(userId: user.id, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try self.revokeOtherSessions(tx, of: user.id, except: session.sessionId, reason: "credential_changed", at: t)
            try self.audit(tx, .pinChanged, outcome: .success, user: user, at: t)
            return true
        })
    }

    /// Sets a new PIN and lifts a lockout, for a session verified by Sign in with Apple or a device
    /// key within `reverificationWindow`. Other sessions of the account end.
    public func resetPIN(accessToken: String, newPIN: String) async throws {
        try PINHasher.validate(newPIN, field: "newPIN")
        _ = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = PINHasher.derive(newPIN, salt: salt, rounds: policy.rounds)
        let t = now()
        try await store.write { tx in
            let s = try self.liveSession(tx, accessToken, at: t)
            try self.requireRecentVerification(tx, s, at: t, methods: [AuthMethod.apple, AuthMethod.biometric], action: "a PIN reset")
            try tx.upsert(PINCredentialRow(userId: s.userId, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            try self.audit(tx, .pinReset, method: s.authMethod, outcome: .success, user: try self.user(tx, s.userId), at: t)
        }
    }

    /// Stores a legacy ContaCasal hash (hex SHA-256 of `couple_pin_salt_v1_` + PIN) for a user; the
    /// next successful check accepts it once and replaces it with a PBKDF2 hash.
    public func importLegacyPINHash(userId: String, hexHash: String) async throws {
        let hex = hexHash.lowercased()
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw IdentityError.invalid("hexHash", "must be 64 hex digits")
        }
        let t = now()
        try await store.write { tx in
            _ = try self.user(tx, userId)
            try tx.upsert(PINCredentialRow(userId: userId, algorithm: PINHasher.legacy, rounds: 0, salt: Data(), hash: Data(hex.utf8), failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
        }
    }

    /// The PIN check shared by sign-in and verification.
    ///
    /// The attempt is counted before the KDF runs (so parallel guesses cannot slip past the delay),
    /// the KDF runs outside any transaction, and success resets the count in a second transaction.
    func checkPIN<T: Sendable>(
        _ pin: String, kind: AuditKind, field: String = "pin",
        locate: @escaping @Sendable (any IdentityTransaction) throws -> UserRow?,
        onSuccess: @escaping @Sendable (any IdentityTransaction, UserRow, Date) throws -> T
    ) async throws -> T {
        let policy = configuration.pin
        let t0 = now()
        let wrong = IdentityError(.invalidCredentials, field: field, "wrong PIN or unknown user")
        // Phase 1: reserve the attempt.
        let reserved: (UserRow, PINCredentialRow)? = try await commit { tx in
            guard let user = try locate(tx), var cred = try tx.fetchOne(PINCredentialRow.self, "userId", .text(user.id)) else {
                try self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "unknown_user", at: t0)
                return .success(nil)
            }
            if cred.lockedAt != nil || cred.failedAttempts >= policy.lockoutThreshold {
                try self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "locked", user: user, at: t0)
                return .failure(IdentityError(.locked, field: field, "too many wrong PINs; reset the PIN with Sign in with Apple or a device key"))
            }
            if let next = cred.nextAttemptAt, next > t0 {
                try self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "throttled", user: user, at: t0)
                return .failure(IdentityError(.throttled, field: field, "too many wrong PINs", retryAfter: next.timeIntervalSince(t0)))
            }
            cred.failedAttempts += 1
            let delay = policy.delay(afterFailures: cred.failedAttempts)
            cred.nextAttemptAt = delay > 0 ? t0.addingTimeInterval(delay) : nil
            try tx.update(cred)
            return .success((user, cred))
        }
        guard let (user, cred) = reserved else {
            // Spend the same KDF time for an unknown user so timing does not reveal which usernames exist.
            _ = PINHasher.derive(pin, salt: Data(count: policy.saltBytes), rounds: policy.rounds)
            throw wrong
        }
        let ok = PINHasher.matches(pin, cred)
        let rehashed: PINCredentialRow? =
            ok && PINHasher.needsRehash(cred, policy: policy)
            ? PINHasher.makeCredential(userId: user.id, pin: pin, policy: policy, random: random, now: t0) : nil
        let t = now()
        // Phase 2: settle the attempt.
        return try await commit { tx in
            guard var current = try tx.fetchOne(PINCredentialRow.self, "userId", .text(user.id)) else { return .failure(wrong) }
            guard ok, current.hash == cred.hash, current.lockedAt == nil else {
                try self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "wrong_pin", user: user, at: t)
                if current.failedAttempts >= policy.lockoutThreshold, current.lockedAt == nil {
                    current.lockedAt = t
                    try tx.update(current)
                    try self.audit(tx, .pinLockout, method: AuthMethod.pin, outcome: .failure, reason: "failures:\(current.failedAttempts)", user: user, at: t)
                }
                return .failure(wrong)
            }
            if var fresh = rehashed {
                fresh.updatedAt = t
                current = fresh
                try self.audit(tx, .pinRehashed, method: AuthMethod.pin, outcome: .success, reason: cred.algorithm, user: user, at: t)
            }
            current.failedAttempts = 0
            current.nextAttemptAt = nil
            try tx.update(current)
            // A PIN is the fallback for locked device keys: it unlocks them.
            for var key in try tx.fetchAll(DeviceKeyRow.self, "userId", .text(user.id)) where key.lockedAt != nil || key.failedAttempts > 0 {
                key.lockedAt = nil
                key.failedAttempts = 0
                try tx.update(key)
            }
            let result = try onSuccess(tx, user, t)
            try self.audit(tx, kind, method: AuthMethod.pin, outcome: .success, user: user, at: t)
            return .success(result)
        }
    }
}
