import Foundation
import PolicyModel

/// The privacy choices that gate what data may leave the device (seed 003); secure by default.
public struct PrivacySettings: Sendable, Hashable, Codable {
    /// Whether usage analytics may be collected.
    public var analytics: Bool
    /// Whether crash reports may be sent.
    public var crashReporting: Bool
    /// Requires sending data to an LLM service.
    public var aiSuggestions: Bool
    /// How much data may be shared with partners.
    public var dataSharing: DataSharing

    /// Settings with every choice given; each omitted one is off (`dataSharing` `.none`).
    public init(analytics: Bool = false, crashReporting: Bool = false, aiSuggestions: Bool = false, dataSharing: DataSharing = .none) {
        self.analytics = analytics
        self.crashReporting = crashReporting
        self.aiSuggestions = aiSuggestions
        self.dataSharing = dataSharing
    }

    /// The settings as `Subject.attributes`.
    public var attributes: [String: Value] {
        ["analytics": .bool(analytics), "crashReporting": .bool(crashReporting), "aiSuggestions": .bool(aiSuggestions), "dataSharing": .string(dataSharing.rawValue)]
    }
}

/// How much of a user's data may be shared with partners, least first; a policy reads it as
/// `subject.attributes.dataSharing`.
public enum DataSharing: String, Sendable, Hashable, Codable, CaseIterable {
    /// Nothing is shared.
    case none
    /// Only what a partner service needs to work.
    case minimal
    /// The app's usual sharing.
    case standard
}

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
