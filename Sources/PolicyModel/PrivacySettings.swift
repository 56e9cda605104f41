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
