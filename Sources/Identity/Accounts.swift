import Foundation
import PolicyModel

extension IdentityService {
    /// Creates an anonymous account and signs it in (seed 001's default path); counts against the
    /// source's sign-up limit (`AbuseLimits.signUps`).
    public func signInAnonymously(source: ClientSource, device: SessionDevice? = nil) async throws -> SessionTokens {
        let t = now()
        return try await store.write { tx in
            try await self.checkSignUps(tx, source, at: t)
            try await self.countGuess(tx, self.signUpWindow(source), at: t)
            let user = try await self.insertUser(tx, at: t)
            let tokens = try await self.createSession(tx, userId: user.id, method: AuthMethod.anonymous, device: device, at: t)
            try await self.audit(tx, .signUp, method: AuthMethod.anonymous, outcome: .success, user: user, at: t)
            return tokens
        }
    }

    /// Gives the signed-in account a username, for username + PIN sign-in later. An account with a
    /// credential needs a verification by it within `reverificationWindow`; "is taken" answers count
    /// against the user and against `source` (`AbuseLimits.usernameProbes` per window each, the source's
    /// shared with registration), since anonymous accounts cost nothing to make.
    public func setUsername(accessToken: String, username: String) async throws {
        try await setUsername(accessToken: accessToken, username: username, source: .inProcess)
    }

    /// `setUsername(accessToken:username:)` with the client it comes from, for the per-source probe limit.
    public func setUsername(accessToken: String, username: String, source: ClientSource) async throws {
        try Self.validateUsername(username)
        let t = now()
        try await commit { tx -> Result<Void, IdentityError> in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await self.requireRecentVerification(tx, s, at: t, action: "setting the username")
            if let other = try await tx.fetchOne(UserRow.self, "username", .text(username)), other.id != s.userId {
                return .failure(try await self.takenAnswer(tx, scopes: ["username-probe-user:" + s.userId, "username-probe:" + source.digest], at: t))
            }
            var user = try await self.user(tx, s.userId)
            user.username = username
            try await tx.update(user)
            try await self.audit(tx, .usernameSet, outcome: .success, user: user, at: t)
            return .success(())
        }
    }

}

extension IdentityService {
    /// The account of a live session, as its owner may see it; any live session suffices (it reveals no secret).
    /// The account's `appAccountToken` is made on the first call (a write), read after that.
    public func profile(accessToken: String) async throws -> AccountProfile {
        let s = try await validate(accessToken: accessToken)
        var token = try await store.readOne { tx in try await tx.fetchOne(AppAccountTokenRow.self, "userId", .text(s.userId))?.token }
        if token == nil {
            let t = now()
            token = try await store.write { tx in try await self.appAccountToken(tx, userId: s.userId, at: t) }
        }
        let appAccountToken = token ?? ""
        return try await store.read { tx in
            let u = try await self.user(tx, s.userId)
            let sub = try await tx.fetchOne(SubscriptionRow.self, "userId", .text(u.id))
            return AccountProfile(
                userId: u.id, username: u.username, displayName: u.displayName, email: u.email,
                isPrivateRelayEmail: u.isPrivateRelayEmail,
                appleUserIds: try await tx.fetchAll(AppleIdentityRow.self, "userId", .text(u.id)).map(\.subject).sorted(),
                hasPIN: try await tx.fetchOne(PINCredentialRow.self, "userId", .text(u.id)) != nil,
                deviceIds: try await tx.fetchAll(DeviceKeyRow.self, "userId", .text(u.id)).map(\.deviceId).sorted(),
                appRoles: try await tx.fetchAll(AppRoleRow.self, "userId", .text(u.id)).map(\.role).sorted(),
                tier: sub?.tier, subscriptionExpiresAt: sub?.expiresAt, appAccountToken: appAccountToken)
        }
    }
}
