/// The answer to a `Request`: allow or deny, why, and what the user can do about it.
public struct Decision: Sendable, Hashable {
    /// Allow or deny.
    public var effect: Effect
    /// Why: the contract's reason code.
    public var reason: Reason
    /// User-facing text; present on every deny.
    public var message: String?
    /// For `limit_exceeded` and an allowed limited action: the cap of the subject's tier.
    public var limit: Int?
    /// How much of the limit the request says is used.
    public var used: Int?
    /// How much of the limit is left (0 when exceeded).
    public var remaining: Int?
    /// The tier id that would lift the denial.
    public var upgradeTo: String?
    /// Where the rule that decided is written.
    public var policy: SourceLocation?

    /// A decision with the fields that apply; the others stay absent.
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

    /// Whether the effect is allow.
    @inlinable
    public var isAllowed: Bool { effect == .allow }
}

/// The two outcomes of a decision.
public enum Effect: String, Sendable, Hashable, CaseIterable, Codable {
    /// The subject may take the action.
    case allow
    /// The subject may not take the action; `reason` says why.
    case deny
}

/// Why a decision came out as it did. The raw values are the contract's reason codes.
public enum Reason: String, Sendable, Hashable, CaseIterable, Codable {
    /// Every requirement passed, or an allow rule granted the action.
    case allowed
    /// The policy does not know the resource type or the action.
    case defaultDeny = "default_deny"
    /// An explicit deny rule matched.
    case deniedByRule = "denied_by_rule"
    /// The action needs a signed-in subject.
    case unauthenticated
    /// The subject must verify again: another method, or more recently.
    case stepUpRequired = "step_up_required"
    /// The action needs an app role the subject lacks.
    case roleRequired = "role_required"
    /// The subject is not a member of the resource.
    case notMember = "not_member"
    /// A member whose role does not grant the action.
    case accessDenied = "access_denied"
    /// Only the owner may take the action.
    case ownerOnly = "owner_only"
    /// The subject's tier lacks the feature; `upgradeTo` names the tier that has it.
    case requiresUpgrade = "requires_upgrade"
    /// The tier's limit is used up; `limit`, `used` and `remaining` say how far.
    case limitExceeded = "limit_exceeded"
    /// The subject's privacy settings do not consent to the action.
    case consentRequired = "consent_required"
}

/// A place in a policy file: `path:line:column`, both counted from 1.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The file's path as the policy set was loaded.
    public var file: String
    /// The line, from 1.
    public var line: Int
    /// The column, from 1.
    public var column: Int

    /// A location from its parts.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`.
    public var description: String { "\(file):\(line):\(column)" }

    /// Orders by file, then line, then column.
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}
