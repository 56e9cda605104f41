/// The answer to a `Request`: allow or deny, why, and what the user can do about it.
public struct Decision: Sendable, Hashable {
    public var effect: Effect
    public var reason: Reason
    /// User-facing text; present on every deny.
    public var message: String?
    public var limit: Int?
    public var used: Int?
    public var remaining: Int?
    /// The tier id that would lift the denial.
    public var upgradeTo: String?
    /// Where the rule that decided is written.
    public var policy: SourceLocation?

    @inlinable
    public init(
        effect: Effect, reason: Reason, message: String? = nil, limit: Int? = nil, used: Int? = nil,
        remaining: Int? = nil, upgradeTo: String? = nil, policy: SourceLocation? = nil
    ) {
        self.effect = effect
        self.reason = reason
        self.message = message
        self.limit = limit
        self.used = used
        self.remaining = remaining
        self.upgradeTo = upgradeTo
        self.policy = policy
    }

    @inlinable
    public var isAllowed: Bool { effect == .allow }
}

public enum Effect: String, Sendable, Hashable, CaseIterable, Codable {
    case allow
    case deny
}

/// Why a decision came out as it did. The raw values are the contract's reason codes.
public enum Reason: String, Sendable, Hashable, CaseIterable, Codable {
    case allowed
    case defaultDeny = "default_deny"
    case deniedByRule = "denied_by_rule"
    case unauthenticated
    case stepUpRequired = "step_up_required"
    case roleRequired = "role_required"
    case notMember = "not_member"
    case accessDenied = "access_denied"
    case ownerOnly = "owner_only"
    case requiresUpgrade = "requires_upgrade"
    case limitExceeded = "limit_exceeded"
    case consentRequired = "consent_required"
}

/// A place in a policy file: `path:line:column`, both counted from 1.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }

    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}
