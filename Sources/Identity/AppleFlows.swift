import Foundation
import PolicyModel

/// What `handleAppleNotification` did with a verified notification.
public enum AppleNotificationOutcome: Sendable, Hashable {
    /// The Apple id's state changed to this (and its sessions ended).
    case applied(AppleCredentialState)
    /// An email event, audited only.
    case recorded
    /// Older than the identity's last state change: ignored.
    case stale
    /// No account holds this Apple id: ignored.
    case unknownSubject
}

/// Apple's credential states for a user id (`ASAuthorizationAppleIDProvider.CredentialState`).
public enum AppleCredentialState: String, Sendable, CaseIterable {
    /// The Apple id may sign in.
    case authorized
    /// The user stopped using Sign in with Apple for the app; every session of the account ends.
    case revoked
    /// Apple knows no such user id (deleted); every session of the account ends.
    case notFound
    /// The app moved to another developer team: the account moves to the user's id under the new
    /// team, and the old id can no longer sign in.
    case transferred
}

extension IdentityService {
    static func validateDisplayName(_ name: String?) throws(IdentityError) -> String? {
        guard let name else { return nil }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return nil }
        guard trimmed.count <= 200, !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid("fullName", "must be at most 200 characters without control characters")
        }
        guard !trimmed.unicodeScalars.contains(where: isInvisibleOrDirectional) else {
            throw .invalid("fullName", "must not contain bidirectional controls or zero-width characters")
        }
        return trimmed
    }

    static func validateRawNonce(_ raw: String) throws(IdentityError) {
        guard raw.utf8.count == 43, SecretCoding.fromBase64URL(raw) != nil else {
            throw .invalid("rawNonce", "must be a nonce issued by beginAppleSignIn")
        }
    }

    /// Issues a single-use raw nonce for one Sign in with Apple attempt. The app puts its SHA-256
    /// (hex) in the Apple request and sends the raw nonce back with the identity token.
    public func beginAppleSignIn() async throws -> String {
        let raw = SecretCoding.base64URL(random.bytes(32))
        let t = now()
        let row = AppleNonceRow(nonceHash: SecretCoding.sha256(raw), expiresAt: t.addingTimeInterval(configuration.appleNonceLifetime), usedAt: nil)
        try await store.write { tx in try await tx.insert(row) }
        return raw
    }

    /// Consumes a nonce; false if it is unknown, used or expired.
    func consumeNonce(_ tx: any IdentityTransaction, _ hash: Data, at t: Date) async throws -> Bool {
        guard var n = try await tx.fetchOne(AppleNonceRow.self, "nonceHash", .blob(hash)), n.usedAt == nil, n.expiresAt > t else { return false }
        n.usedAt = t
        try await tx.update(n)
        return true
    }

    /// Verifies the token, auditing and burning the nonce on failure.
    func verifiedAppleClaims(identityToken: String, rawNonce: String, kind: AuditKind) async throws -> (AppleIdentityClaims, Data) {
        try Self.validateRawNonce(rawNonce)
        let nonceHash = SecretCoding.sha256(rawNonce)
        do {
            return (try await appleVerifier.verify(identityToken, expectedNonceHash: nonceHash), nonceHash)
        } catch {
            let t = now()
            counters.add(.appleTokenRejections)
            try await store.write { tx in
                _ = try await self.consumeNonce(tx, nonceHash, at: t)
                // Coalesced: a flood of junk tokens writes one row per minute per failing part.
                try await self.auditRefusal(tx, kind, method: AuthMethod.apple, reason: error.field, user: nil, scope: "apple", at: t)
            }
            throw error
        }
    }

    /// Signs in with a Sign in with Apple identity token, creating the account on first sign-in.
    ///
    /// `fullName` is what the app received from Apple; it is only ever sent on the first authorization
    /// and only kept when the account is created. The email (possibly a private relay address) is kept as given.
    public func signInWithApple(identityToken: String, rawNonce: String, fullName: String? = nil, device: SessionDevice? = nil) async throws -> SessionTokens {
        let name = try Self.validateDisplayName(fullName)
        let (claims, nonceHash) = try await verifiedAppleClaims(identityToken: identityToken, rawNonce: rawNonce, kind: .signIn)
        let t = now()
        return try await commit { tx in
            guard try await self.consumeNonce(tx, nonceHash, at: t) else {
                try await self.audit(tx, .signIn, method: AuthMethod.apple, outcome: .failure, reason: "identityToken.nonce", at: t)
                return .failure(.rejected("rawNonce", "unknown, used or expired nonce"))
            }
            if var identity = try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(claims.subject)) {
                var user = try await self.user(tx, identity.userId)
                if identity.credentialState == AppleCredentialState.transferred.rawValue {
                    try await self.audit(tx, .signIn, method: AuthMethod.apple, outcome: .failure, reason: "transferred", user: user, at: t)
                    return .failure(.rejected("identityToken.sub", "this Apple id was transferred to another team"))
                }
                if identity.credentialState != AppleCredentialState.authorized.rawValue {
                    // A token Apple issued after the revocation means the user authorized the app
                    // again; one issued before it (replayed, or held back) does not undo it.
                    if let changed = identity.stateChangedAt, claims.issuedAt <= changed {
                        try await self.audit(tx, .signIn, method: AuthMethod.apple, outcome: .failure, reason: "issued_before_\(identity.credentialState)", user: user, at: t)
                        return .failure(.rejected("identityToken.iat", "issued before this Apple id was revoked; sign in with Apple again"))
                    }
                    try await self.audit(tx, .credentialStateChanged, method: AuthMethod.apple, outcome: .success, reason: "\(identity.credentialState)->authorized", user: user, at: t)
                    identity.credentialState = AppleCredentialState.authorized.rawValue
                    identity.stateChangedAt = t
                }
                if let email = claims.email, email != identity.email {
                    identity.email = email
                    identity.isPrivateRelay = claims.isPrivateEmail
                    user.email = email
                    user.isPrivateRelayEmail = claims.isPrivateEmail
                    try await tx.update(user)
                }
                identity.updatedAt = t
                try await tx.update(identity)
                let tokens = try await self.createSession(tx, userId: user.id, method: AuthMethod.apple, device: device, at: t)
                try await self.audit(tx, .signIn, method: AuthMethod.apple, outcome: .success, user: user, at: t)
                return .success(tokens)
            }
            let user = try await self.insertUser(tx, displayName: name, email: claims.email, privateRelay: claims.isPrivateEmail, at: t)
            try await tx.insert(AppleIdentityRow(subject: claims.subject, userId: user.id, email: claims.email, isPrivateRelay: claims.isPrivateEmail, credentialState: AppleCredentialState.authorized.rawValue, transferredTo: nil, createdAt: t, updatedAt: t, stateChangedAt: t))
            let tokens = try await self.createSession(tx, userId: user.id, method: AuthMethod.apple, device: device, at: t)
            try await self.audit(tx, .signUp, method: AuthMethod.apple, outcome: .success, user: user, at: t)
            return .success(tokens)
        }
    }

    /// Links a Sign in with Apple identity to the signed-in account, without a web view.
    ///
    /// An account with a credential (PIN, device key) needs a verification by it within
    /// `reverificationWindow`, and the session keeps that verification: the new Apple id does not
    /// vouch for itself. An account with no credential (anonymous) is raised to the `apple` level.
    /// Other sessions of the account end.
    public func linkApple(accessToken: String, identityToken: String, rawNonce: String, fullName: String? = nil) async throws -> StepUp {
        let name = try Self.validateDisplayName(fullName)
        _ = try await validate(accessToken: accessToken)
        let (claims, nonceHash) = try await verifiedAppleClaims(identityToken: identityToken, rawNonce: rawNonce, kind: .appleLinked)
        let t = now()
        return try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            guard try await self.consumeNonce(tx, nonceHash, at: t) else { throw IdentityError.rejected("rawNonce", "unknown, used or expired nonce") }
            try await self.requireRecentVerification(tx, s, at: t, action: "linking an Apple id")
            if try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(claims.subject)) != nil {
                throw IdentityError(.conflict, field: "identityToken.sub", "this Apple id is linked to an account already")
            }
            if try await !tx.fetchAll(AppleIdentityRow.self, "userId", .text(s.userId)).isEmpty {
                throw IdentityError(.conflict, field: "accessToken", "this account has an Apple id linked already")
            }
            let hadCredential = try await self.hasCredential(tx, s.userId)
            var user = try await self.user(tx, s.userId)
            try await tx.insert(AppleIdentityRow(subject: claims.subject, userId: user.id, email: claims.email, isPrivateRelay: claims.isPrivateEmail, credentialState: AppleCredentialState.authorized.rawValue, transferredTo: nil, createdAt: t, updatedAt: t, stateChangedAt: t))
            if user.displayName == nil { user.displayName = name }
            if let email = claims.email {
                user.email = email
                user.isPrivateRelayEmail = claims.isPrivateEmail
            }
            try await tx.update(user)
            try await self.revokeOtherSessions(tx, of: user.id, except: s.id, reason: "credential_changed", at: t)
            try await self.audit(tx, .appleLinked, method: AuthMethod.apple, outcome: .success, user: user, at: t)
            if hadCredential { return StepUp(accessToken: accessToken, rotated: false, method: s.authMethod) }
            return try await self.stepUp(tx, s, method: AuthMethod.apple, presented: accessToken, at: t)
        }
    }

    /// Unlinks the account's Apple id. Needs a verification within `reverificationWindow` and
    /// another credential (PIN or device key) to remain; other sessions of the account end.
    public func unlinkApple(accessToken: String) async throws {
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, action: "unlinking the Apple id")
            let removed = try await tx.deleteAll(AppleIdentityRow.self, ["userId": .text(s.userId)])
            guard removed > 0 else { throw IdentityError(.notFound, field: "accessToken", "no Apple id is linked to this account") }
            guard try await self.hasCredential(tx, s.userId) else {
                throw IdentityError(.conflict, field: "accessToken", "set a PIN first: the Apple id is this account's only credential")
            }
            try await self.revokeOtherSessions(tx, of: s.userId, except: s.id, reason: "credential_changed", at: t)
            try await self.audit(tx, .appleUnlinked, method: AuthMethod.apple, outcome: .success, user: try await self.user(tx, s.userId), at: t)
        }
    }

    /// Applies a Sign in with Apple server-to-server notification: `signedPayload` is the `payload`
    /// JWS of Apple's POST, verified like an identity token (Apple's keys, RS256, `iss`, `aud`, `iat`).
    ///
    /// `consent-revoked` sets the Apple id `revoked` and `account-delete` sets it `notFound`; both end
    /// every session of the user. Email events are recorded only. An event older than the identity's
    /// last state change (a replay, or one overtaken by a newer sign-in) changes nothing; so does one
    /// about an Apple id no account holds. Returns what was applied.
    @discardableResult
    public func handleAppleNotification(signedPayload: String) async throws -> AppleNotificationOutcome {
        let event: AppleNotification
        do {
            event = try await appleVerifier.verifyNotification(signedPayload)
        } catch {
            let t = now()
            counters.add(.appleTokenRejections)
            try await store.write { tx in
                try await self.auditRefusal(tx, .appleNotification, method: AuthMethod.apple, reason: error.field, user: nil, scope: "apple-notification", at: t)
            }
            throw error
        }
        let t = now()
        return try await store.write { tx in
            guard var identity = try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(event.subject)) else { return .unknownSubject }
            let user = try await self.user(tx, identity.userId)
            if let changed = identity.stateChangedAt, event.eventTime <= changed {
                try await self.audit(tx, .appleNotification, method: AuthMethod.apple, outcome: .failure, reason: "stale:\(event.kind.rawValue)", user: user, at: t)
                return .stale
            }
            let state: AppleCredentialState
            switch event.kind {
            case .consentRevoked: state = .revoked
            case .accountDelete: state = .notFound
            case .emailDisabled, .emailEnabled:
                try await self.audit(tx, .appleNotification, method: AuthMethod.apple, outcome: .success, reason: event.kind.rawValue, user: user, at: t)
                return .recorded
            }
            let old = identity.credentialState
            identity.credentialState = state.rawValue
            identity.updatedAt = t
            identity.stateChangedAt = event.eventTime
            try await tx.update(identity)
            let count = try await self.revokeSessions(tx, of: user.id, reason: "apple_\(state.rawValue)", at: t)
            try await self.audit(tx, .sessionsRevoked, method: AuthMethod.apple, outcome: .success, reason: "apple_\(state.rawValue):\(count)", user: user, at: t)
            try await self.audit(tx, .credentialStateChanged, method: AuthMethod.apple, outcome: .success, reason: "\(old)->\(state.rawValue)", user: user, at: t)
            return .applied(state)
        }
    }

    /// Records a credential state reported out of band: an operator action, never an app's.
    ///
    /// `revoked` and `notFound` end every session of the user; `transferred` moves the account to
    /// `transferredTo`, the user's id under the new team (from Apple's user-migration endpoint),
    /// keeping sessions. Apple's own revocations arrive through `handleAppleNotification`.
    public func updateAppleCredentialState(
        appleUserId: String, state: AppleCredentialState, transferredTo: String? = nil, operator credential: OperatorCredential
    ) async throws {
        try authorizeOperator(credential)
        guard !appleUserId.isEmpty, appleUserId.utf8.count <= 255 else { throw IdentityError.invalid("appleUserId", "must be 1 to 255 bytes") }
        if state == .transferred {
            guard let to = transferredTo, !to.isEmpty, to.utf8.count <= 255, to != appleUserId else {
                throw IdentityError.invalid("transferredTo", "a transfer needs the user's new Apple id")
            }
        }
        let t = now()
        try await store.write { tx in
            guard var identity = try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(appleUserId)) else {
                throw IdentityError(.notFound, field: "appleUserId", "no linked Apple id")
            }
            let user = try await self.user(tx, identity.userId)
            let old = identity.credentialState
            identity.credentialState = state.rawValue
            identity.updatedAt = t
            identity.stateChangedAt = t
            switch state {
            case .authorized:
                break
            case .revoked, .notFound:
                let count = try await self.revokeSessions(tx, of: user.id, reason: "apple_\(state.rawValue)", at: t)
                try await self.audit(tx, .sessionsRevoked, method: AuthMethod.apple, outcome: .success, reason: "apple_\(state.rawValue):\(count)", user: user, at: t)
            case .transferred:
                let to = transferredTo!
                if try await tx.fetchOne(AppleIdentityRow.self, "subject", .text(to)) != nil {
                    throw IdentityError(.conflict, field: "transferredTo", "is linked to an account already")
                }
                identity.transferredTo = to
                try await tx.insert(AppleIdentityRow(subject: to, userId: user.id, email: identity.email, isPrivateRelay: identity.isPrivateRelay, credentialState: AppleCredentialState.authorized.rawValue, transferredTo: nil, createdAt: t, updatedAt: t, stateChangedAt: t))
            }
            try await tx.update(identity)
            try await self.audit(tx, .credentialStateChanged, method: AuthMethod.apple, outcome: .success, reason: "\(old)->\(state.rawValue)", user: user, at: t)
        }
    }
}
