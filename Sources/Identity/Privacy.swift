import Foundation
import PolicyModel

extension IdentityService {
    /// The privacy settings of the session's user. Throws `unauthenticated` for a token that is not live.
    public func privacySettings(accessToken: String) async throws -> PrivacySettings {
        let s = try await validate(accessToken: accessToken)
        return try await store.readOne { tx in try await self.privacy(tx, s.userId) }
    }

    /// Replaces the session's user's privacy settings and audits the change. Throws `unauthenticated`
    /// for a token that is not live.
    public func setPrivacySettings(accessToken: String, _ settings: PrivacySettings) async throws {
        let t = now()
        try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            try await tx.upsert(PrivacySettingsRow(userId: s.userId, analytics: settings.analytics, crashReporting: settings.crashReporting, aiSuggestions: settings.aiSuggestions, dataSharing: settings.dataSharing.rawValue, updatedAt: t))
            try await self.audit(tx, .privacyChanged, outcome: .success, user: try await self.user(tx, s.userId), at: t)
        }
    }

    func privacy(_ tx: any IdentityTransaction, _ userId: String) async throws -> PrivacySettings {
        PrivacySettings(try await tx.fetchOne(PrivacySettingsRow.self, "userId", .text(userId)))
    }
}
