import Foundation
import PolicyModel

/// A PIN attempt counted before its KDF runs: against a user's PIN, or under an unknown username.
private enum ReservedAttempt: Sendable {
    case known(UserRow, PINCredentialRow)
    case unknown
}

extension IdentityService {
    static func validateUsername(_ username: String) throws(IdentityError) {
        let ok = (3...32).contains(username.utf8.count) && username.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F || $0 == 0x2E || $0 == 0x2D
        }
        guard ok else { throw .invalid("username", "must be 3 to 32 letters, digits, '.', '_' or '-'") }
    }

    /// Creates an account with a username and PIN and signs it in at the `pin` level.
    ///
    /// The PIN must not be on the blocklist. "Username is taken" answers count against `source`
    /// (`AbuseLimits.usernameProbes` per window), so registration is not a free username oracle.
    public func register(username: String, pin: String, source: ClientSource, device: SessionDevice? = nil) async throws -> SessionTokens {
        try Self.validateUsername(username)
        try PINHasher.validateNew(pin)
        let t = now()
        let probe = "username-probe:" + source.digest
        // Refusals (taken name, spent sign-up allowance) come before the KDF, so they cost no KDF time.
        try await commit { tx -> Result<Void, IdentityError> in
            try await self.checkSignUps(tx, source, at: t)
            if try await tx.fetchOne(UserRow.self, "username", .text(username)) != nil {
                return .failure(try await self.takenAnswer(tx, scope: probe, at: t))
            }
            return .success(())
        }
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = await PINHasher.derive(pin, salt: salt, rounds: policy.rounds)
        return try await commit { tx in
            if try await tx.fetchOne(UserRow.self, "username", .text(username)) != nil {
                return .failure(try await self.takenAnswer(tx, scope: probe, at: t))
            }
            try await self.countGuess(tx, self.signUpWindow(source), at: t)
            let user = try await self.insertUser(tx, username: username, at: t)
            try await tx.insert(PINCredentialRow(userId: user.id, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            let tokens = try await self.createSession(tx, userId: user.id, method: AuthMethod.pin, device: device, at: t)
            try await self.audit(tx, .signUp, method: AuthMethod.pin, outcome: .success, user: user, at: t)
            return .success(tokens)
        }
    }

    /// Signs in with username and PIN, subject to the throttling schedule, the lockout and the
    /// per-source failure limit. Known and unknown usernames get the same answers in the same time.
    public func signIn(username: String, pin: String, source: ClientSource, device: SessionDevice? = nil) async throws -> SessionTokens {
        try Self.validateUsername(username)
        try PINHasher.validate(pin)
        return try await checkPIN(pin, kind: .signIn, source: source, unknownKey: "username:" + username.lowercased(), locate: { tx in
            try await tx.fetchOne(UserRow.self, "username", .text(username))
        }, onSuccess: { tx, user, t in
            try await self.createSession(tx, userId: user.id, method: AuthMethod.pin, device: device, at: t)
        })
    }

    /// Verifies the signed-in user's PIN on this session (step-up to the `pin` level).
    public func verifyPIN(accessToken: String, pin: String) async throws -> StepUp {
        try PINHasher.validate(pin)
        let userId = try await validate(accessToken: accessToken).userId
        return try await checkPIN(pin, kind: .pinVerify, source: nil, unknownKey: "user:" + userId, locate: { tx in try await tx.fetchOne(UserRow.self, "id", .text(userId)) }, onSuccess: { tx, _, t in
            try await self.stepUp(tx, try await self.liveSession(tx, accessToken, at: t), method: AuthMethod.pin, presented: accessToken, at: t)
        })
    }

    /// Sets the first PIN of an account that has none (e.g. after anonymous sign-in).
    ///
    /// An account with another credential (an Apple id, a device key) needs a verification by it in
    /// the last `reverificationWindow`, and the session keeps its verification: a new PIN does not
    /// vouch for itself. An account with no credential at all is raised to the `pin` level. Other
    /// sessions of the account end.
    public func setPIN(accessToken: String, pin: String) async throws -> StepUp {
        try PINHasher.validateNew(pin)
        // The session is checked before the KDF, so a caller without one costs no KDF time.
        _ = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = await PINHasher.derive(pin, salt: salt, rounds: policy.rounds)
        let t = now()
        return try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            if try await tx.fetchOne(PINCredentialRow.self, "userId", .text(s.userId)) != nil {
                throw IdentityError(.conflict, field: "pin", "already set; change it with the current PIN")
            }
            let hadCredential = try await self.hasCredential(tx, s.userId)
            try await self.requireRecentVerification(tx, s, at: t, action: "setting a PIN")
            try await tx.insert(PINCredentialRow(userId: s.userId, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try await self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            try await self.audit(tx, .pinSet, outcome: .success, user: try await self.user(tx, s.userId), at: t)
            if hadCredential { return StepUp(accessToken: accessToken, rotated: false, method: s.authMethod) }
            return try await self.stepUp(tx, s, method: AuthMethod.pin, presented: accessToken, at: t)
        }
    }

    /// Replaces the PIN after checking the current one (a wrong current PIN counts as a failure).
    /// Other sessions of the account end.
    public func changePIN(accessToken: String, currentPIN: String, newPIN: String) async throws {
        try PINHasher.validate(currentPIN, field: "currentPIN")
        try PINHasher.validateNew(newPIN, field: "newPIN")
        let session = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = await PINHasher.derive(newPIN, salt: salt, rounds: policy.rounds)
        _ = try await checkPIN(currentPIN, kind: .pinVerify, field: "currentPIN", source: nil, unknownKey: "user:" + session.userId, locate: { tx in try await tx.fetchOne(UserRow.self, "id", .text(session.userId)) }, onSuccess: { tx, user, t in
            try await tx.upsert(PINCredentialRow(userId: user.id, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try await self.revokeOtherSessions(tx, of: user.id, except: session.sessionId, reason: "credential_changed", at: t)
            try await self.audit(tx, .pinChanged, outcome: .success, user: user, at: t)
            return true
        })
    }

    /// Sets a new PIN and lifts a lockout, for a session verified by Sign in with Apple or a device
    /// key within `reverificationWindow`. Other sessions of the account end.
    public func resetPIN(accessToken: String, newPIN: String) async throws {
        try PINHasher.validateNew(newPIN, field: "newPIN")
        _ = try await validate(accessToken: accessToken)
        let policy = configuration.pin
        let salt = Data(random.bytes(policy.saltBytes))
        let hash = await PINHasher.derive(newPIN, salt: salt, rounds: policy.rounds)
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, methods: [AuthMethod.apple, AuthMethod.biometric], action: "a PIN reset")
            try await tx.upsert(PINCredentialRow(userId: s.userId, algorithm: PINHasher.pbkdf2, rounds: policy.rounds, salt: salt, hash: hash, failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
            try await self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            try await self.audit(tx, .pinReset, method: s.authMethod, outcome: .success, user: try await self.user(tx, s.userId), at: t)
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
            _ = try await self.user(tx, userId)
            try await tx.upsert(PINCredentialRow(userId: userId, algorithm: PINHasher.legacy, rounds: 0, salt: Data(), hash: Data(hex.utf8), failedAttempts: 0, nextAttemptAt: nil, lockedAt: nil, updatedAt: t))
        }
    }

    /// The PIN check shared by sign-in and verification.
    ///
    /// The attempt is reserved before the KDF runs, in the transaction that checks the limits: the
    /// user's failure count (so parallel guesses cannot slip past the delay) and the source's failure
    /// window (so a burst from one client checks at most `sourcePINFailures` PINs, however many replicas
    /// it is spread over). The KDF runs outside any transaction, and the outcome is settled in a second
    /// transaction; a right PIN gives the source's reservation back. The global failure rate is counted
    /// after the check in a short transaction of its own, also when the settling write failed.
    ///
    /// The audit log holds every checked attempt: the reservation appends a `pending` row (reason
    /// `pin_checked`) in the transaction that counts the attempt, so the row exists whenever the attempt
    /// was counted, and the settle appends the outcome (`wrong_pin`, `unknown_user`, `success`, a lockout)
    /// under the same random `attempt`. Before, the only row was the settle's: a store too loaded to take
    /// the settling write (its deadline, `storage_unavailable`) mostly refused the fallback append too, and
    /// the attempt, counted and checked, left no row. The log stays append-only (a trigger refuses updates),
    /// so the outcome is a second row linked to the first rather than an update of it; a `pending` row no
    /// other row of its `attempt` follows reads "checked, outcome not recorded", never a success.
    ///
    /// A user without a PIN (an unknown username) is throttled the same way under `unknownKey`, runs
    /// a KDF of the same cost and writes the same rows, so answers and timing do not tell them apart.
    func checkPIN<T: Sendable>(
        _ pin: String, kind: AuditKind, field: String = "pin", source: ClientSource?, unknownKey: String,
        locate: @escaping @Sendable (any IdentityTransaction) async throws -> UserRow?,
        onSuccess: @escaping @Sendable (any IdentityTransaction, UserRow, Date) async throws -> T
    ) async throws -> T {
        let policy = configuration.pin
        let t0 = now()
        let wrong = IdentityError(.invalidCredentials, field: field, "wrong PIN or unknown user")
        let unknownScope = "pin-unknown:" + SecretCoding.hex(SecretCoding.sha256(unknownKey).prefix(16))
        let sourceWindow = source.map(sourcePINWindow)
        let counters = self.counters
        let attempt = SecretCoding.hex(random.bytes(16))
        // Phase 1: reserve the attempt, and audit it as checked with its outcome pending.
        let reserved: ReservedAttempt = try await commit { tx in
            if let w = sourceWindow, let wait = try await self.retryAfter(tx, w, at: t0) {
                try await self.auditRefusal(tx, kind, method: AuthMethod.pin, reason: "source_limited", user: nil, scope: w.scope, at: t0)
                return .failure(IdentityError(.throttled, field: "source", "too many failed sign-ins from this client", retryAfter: wait))
            }
            if let user = try await locate(tx), var cred = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(user.id)) {
                let state = (failures: cred.failedAttempts, locked: cred.lockedAt != nil, next: cred.nextAttemptAt)
                if let refusal = try await self.pinRefusal(tx, kind, field: field, state, actor: user, scope: unknownScope, at: t0) { return .failure(refusal) }
                cred.failedAttempts += 1
                let delay = policy.delay(afterFailures: cred.failedAttempts)
                cred.nextAttemptAt = delay > 0 ? t0.addingTimeInterval(delay) : nil
                try await tx.update(cred)
                if let w = sourceWindow { try await self.countGuess(tx, w, at: t0) }
                try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .pending, reason: "pin_checked", user: user, at: t0, attempt: attempt)
                return .success(.known(user, cred))
            }
            var throttle = try await tx.fetchOne(PINThrottleRow.self, "scope", .text(unknownScope)) ?? PINThrottleRow(scope: unknownScope, failures: 0, lastFailureAt: t0)
            let next = throttle.failures > 0 ? throttle.lastFailureAt.addingTimeInterval(policy.delay(afterFailures: throttle.failures)) : nil
            if let refusal = try await self.pinRefusal(tx, kind, field: field, (throttle.failures, false, next), actor: nil, scope: unknownScope, at: t0) {
                return .failure(refusal)
            }
            throttle.failures += 1
            throttle.lastFailureAt = t0
            try await tx.upsert(throttle)
            if let w = sourceWindow { try await self.countGuess(tx, w, at: t0) }
            try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .pending, reason: "pin_checked", at: t0, attempt: attempt)
            return .success(.unknown)
        }
        guard case .known(let user, let cred) = reserved else {
            // The same KDF cost as a real check, then the same settling write.
            _ = await PINHasher.derive(pin, salt: Data(count: policy.saltBytes), rounds: policy.rounds)
            let t = now()
            try await settleWrongPIN(kind, reason: "unknown_user", user: nil, at: t, attempt: attempt) { tx in
                tx.afterCommit { counters.add(.pinFailures) }
                try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "unknown_user", at: t, attempt: attempt)
            }
            throw wrong
        }
        let ok = await PINHasher.matches(pin, cred, policy: policy)
        let rehashed: PINCredentialRow? =
            ok && PINHasher.needsRehash(cred, policy: policy)
            ? await PINHasher.makeCredential(userId: user.id, pin: pin, policy: policy, random: random, now: t0) : nil
        let t = now()
        // Phase 2: settle the attempt.
        let wrongPIN: @Sendable (any IdentityTransaction, PINCredentialRow) async throws -> Void = { tx, current in
            var current = current
            tx.afterCommit { counters.add(.pinFailures) }
            try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: "wrong_pin", user: user, at: t, attempt: attempt)
            if current.failedAttempts >= policy.effectiveLockoutThreshold, current.lockedAt == nil {
                current.lockedAt = t
                try await tx.update(current)
                try await self.audit(
                    tx, .pinLockout, method: AuthMethod.pin, outcome: .failure, reason: "failures:\(current.failedAttempts)", user: user, at: t, attempt: attempt)
            }
        }
        guard ok else {
            try await settleWrongPIN(kind, reason: "wrong_pin", user: user, at: t, attempt: attempt) { tx in
                guard let current = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(user.id)) else { return }
                try await wrongPIN(tx, current)
            }
            throw wrong
        }
        let settled: Result<T, IdentityError> = try await store.write { tx in
            guard var current = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(user.id)) else { return .failure(wrong) }
            // A racing success may have re-hashed the PIN meanwhile (a double tap on a legacy hash):
            // then the PIN is checked again against what is stored now.
            var stillMatches = current.hash == cred.hash
            if !stillMatches { stillMatches = await PINHasher.matches(pin, current, policy: policy) }
            guard stillMatches, current.lockedAt == nil else {
                try await wrongPIN(tx, current)
                return .failure(wrong)
            }
            if var fresh = rehashed, current.hash == cred.hash {
                fresh.updatedAt = t
                current = fresh
                try await self.audit(tx, .pinRehashed, method: AuthMethod.pin, outcome: .success, reason: cred.algorithm, user: user, at: t, attempt: attempt)
            }
            current.failedAttempts = 0
            current.nextAttemptAt = nil
            try await tx.update(current)
            // A right PIN is not a failure of its source: the reservation goes back.
            if let w = sourceWindow, var window = try await tx.fetchOne(GuessLimitRow.self, "scope", .text(w.scope)), window.failures > 0 {
                window.failures -= 1
                try await tx.update(window)
            }
            // A PIN is the fallback for locked device keys: it unlocks them.
            for var key in try await tx.fetchAll(DeviceKeyRow.self, "userId", .text(user.id)) where key.lockedAt != nil || key.failedAttempts > 0 {
                key.lockedAt = nil
                key.failedAttempts = 0
                try await tx.update(key)
            }
            let result = try await onSuccess(tx, user, t)
            try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .success, user: user, at: t, attempt: attempt)
            return .success(result)
        }
        if case .failure(let error) = settled, error == wrong { try await countGlobalPINFailure(at: t) }
        return try settled.get()
    }

    /// Settles a checked wrong PIN with `body`, then counts it in the global rate. When `body`'s write fails
    /// (the store's deadline, retries spent) the attempt is still counted, and the outcome row alone is tried,
    /// before the storage error goes to the caller; if that fails too, the attempt's `pending` row (written
    /// with its reservation) is what the log keeps of it.
    private func settleWrongPIN(
        _ kind: AuditKind, reason: String, user: UserRow?, at t: Date, attempt: String,
        _ body: @escaping @Sendable (any IdentityTransaction) async throws -> Void
    ) async throws {
        do {
            try await store.write(body)
        } catch {
            let counters = self.counters
            _ = try? await store.write { tx in
                tx.afterCommit { counters.add(.pinFailures) }
                try await self.audit(tx, kind, method: AuthMethod.pin, outcome: .failure, reason: reason, user: user, at: t, attempt: attempt)
            }
            try? await countGlobalPINFailure(at: t)
            throw error
        }
        try await countGlobalPINFailure(at: t)
    }

    /// The `locked` or `throttled` refusal an attempt gets in this state (audited, coalesced), or nil.
    /// Known and unknown usernames go through here alike.
    func pinRefusal(
        _ tx: any IdentityTransaction, _ kind: AuditKind, field: String, _ state: (failures: Int, locked: Bool, next: Date?),
        actor: UserRow?, scope: String, at t: Date
    ) async throws -> IdentityError? {
        if state.locked || state.failures >= configuration.pin.effectiveLockoutThreshold {
            try await auditRefusal(tx, kind, method: AuthMethod.pin, reason: "locked", user: actor, scope: scope, at: t)
            return IdentityError(.locked, field: field, "too many wrong PINs; reset the PIN with Sign in with Apple or a device key")
        }
        if let next = state.next, next > t {
            try await auditRefusal(tx, kind, method: AuthMethod.pin, reason: "throttled", user: actor, scope: scope, at: t)
            return IdentityError(.throttled, field: field, "too many wrong PINs", retryAfter: next.timeIntervalSince(t))
        }
        return nil
    }

    /// Lifts a PIN lockout and its delays (an operator action, e.g. after the owner proved who they
    /// are out of band); the owner's only way back when the PIN is the account's sole credential.
    public func unlockPIN(userId: String, operator credential: OperatorCredential) async throws {
        try authorizeOperator(credential)
        let t = now()
        try await store.write { tx in
            let user = try await self.user(tx, userId)
            guard var cred = try await tx.fetchOne(PINCredentialRow.self, "userId", .text(userId)) else {
                throw IdentityError(.notFound, field: "userId", "this user has no PIN")
            }
            cred.failedAttempts = 0
            cred.nextAttemptAt = nil
            cred.lockedAt = nil
            try await tx.update(cred)
            try await self.audit(tx, .pinUnlocked, method: AuthMethod.pin, outcome: .success, reason: "operator", user: user, at: t)
        }
    }
}
