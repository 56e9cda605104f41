public import Foundation
public import PolicyModel

/// Where the client's session stands; `GatehouseClient.sessionStates()` reports each change.
public enum SessionState: Sendable, Hashable {
    /// No session: decisions are made for a signed-out subject.
    case signedOut
    /// A session of `userId` (anonymous ones too: the policy decides what an anonymous session may do).
    case signedIn(userId: String)
    /// The server ended the session (a refresh was refused as `unauthenticated`: revoked, signed out elsewhere, idle too
    /// long, or a refresh token reused): the client holds no session now. Reported once per session.
    case ended(userId: String)

    /// Whether the client holds a session.
    public var isSignedIn: Bool {
        if case .signedIn = self { return true }
        return false
    }
}

/// One question of `GatehouseClient.decideBatch`: the action on the resource, decided for the session's subject.
public struct DecisionQuery: Sendable, Hashable {
    /// The action's name, as the policy declares it on the resource type.
    public var action: String
    /// What the action is taken on; the server fills in owner, members and usage from its store.
    public var resource: Resource
    /// Facts about the moment (`attributes`); the server's clock is `now`.
    public var context: Context

    /// A question for the session's subject.
    public init(action: String, resource: Resource, context: Context = Context()) {
        self.action = action
        self.resource = resource
        self.context = context
    }
}

/// A change to the privacy settings: each field given is set, each nil one kept.
public struct PrivacyChange: Sendable, Hashable {
    /// Analytics may be sent; nil keeps the setting.
    public var analytics: Bool?
    /// Crash reports may be sent; nil keeps the setting.
    public var crashReporting: Bool?
    /// AI suggestions may use the user's sources; nil keeps the setting.
    public var aiSuggestions: Bool?
    /// How much may be shared with partners; nil keeps the setting.
    public var dataSharing: DataSharing?

    /// A change of the fields given.
    public init(analytics: Bool? = nil, crashReporting: Bool? = nil, aiSuggestions: Bool? = nil, dataSharing: DataSharing? = nil) {
        self.analytics = analytics
        self.crashReporting = crashReporting
        self.aiSuggestions = aiSuggestions
        self.dataSharing = dataSharing
    }
}

/// A shared space just created: its resource id and the code a partner joins with.
public struct Space: Sendable, Hashable {
    /// The space's resource id, for decisions on it (`Resource(type: "space", id: resourceId)`).
    public var resourceId: String
    /// The code a partner joins with (`joinSpace(shareCode:)`); it expires.
    public var shareCode: String
}

/// What a StoreKit 2 signed transaction did to the account (`POST /v1/me/purchases`).
public struct PurchaseResult: Sendable, Hashable {
    /// `applied`, `replayed`, `stale` or `revoked`.
    public var outcome: String
    /// The tier the account holds now, if any.
    public var tier: String?
    /// When that tier lapses, if it does.
    public var expiresAt: Date?
}

/// The nonce of one Sign in with Apple attempt: put `sha256` in `ASAuthorizationAppleIDRequest.nonce`, then hand
/// `raw` back with the identity token (`GatehouseClient.signInWithApple`).
public struct AppleSignInNonce: Sendable, Hashable, CustomStringConvertible {
    /// The server's single-use nonce.
    public let raw: String
    /// Its SHA-256, lower-case hex, for the authorization request.
    public var sha256: String { sha256Hex(raw) }

    public var description: String { "AppleSignInNonce(<single use>)" }
}

/// A decision with the trace of every check the policy made on the way to it (`POST /v1/explain`): for a settings
/// screen that says why, or for a developer.
public struct DecisionExplanation: Codable, Sendable, Hashable {
    /// The decision, as `decide` gives it.
    public var decision: Decision
    /// Every check and rule considered, in order.
    public var trace: [ExplanationStep]

    /// An explanation of `decision`.
    public init(decision: Decision, trace: [ExplanationStep]) {
        self.decision = decision
        self.trace = trace
    }

    private enum Keys: String, CodingKey { case trace }

    /// The contract's decision object with a `trace` array added.
    public init(from decoder: any Decoder) throws {
        trace = try decoder.container(keyedBy: Keys.self).decode([ExplanationStep].self, forKey: .trace)
        // The decision is the object less its trace, read by `Decision`'s own (strict) decoder.
        guard case .map(var fields) = try Value(from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "an explanation is an object"))
        }
        fields["trace"] = nil
        decision = try JSONDecoder().decode(Decision.self, from: JSONEncoder().encode(Value.map(fields)))
    }

    /// The decision's fields and `trace`.
    public func encode(to encoder: any Encoder) throws {
        try decision.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(trace, forKey: .trace)
    }
}

/// One check of an explanation: what was checked, how it came out, and where the policy says it.
public struct ExplanationStep: Codable, Sendable, Hashable {
    /// What was checked (`sign-in`, `feature ai_suggestions`, `deny rule NAME`, ...).
    public var check: String
    /// `pass`, `fail`, `skip` or `info`.
    public var outcome: String
    /// The check's outcome in words.
    public var detail: String
    /// `file:line:column` of the policy text that made the check, when there is one.
    public var policy: String?
}

/// One page of `GatehouseClient.resources(type:action:cursor:limit:)` (`GET /v1/resources`).
public struct ResourcePage: Sendable, Hashable {
    /// The ids of the stored resources the user may act on, in the server's id order.
    public var ids: [String]
    /// Pass it as `cursor` for the next page; nil on the last page.
    public var nextCursor: String?
}

/// A resource plan as the server answers it (`POST /v1/plan`; docs/decision-contract.md, "Plans").
public struct ResourcePlanAnswer: Sendable, Hashable {
    /// `always`, `never` or `conditional`.
    public var plan: String
    /// For `never`: the reason a decision would give (`requires_upgrade`, `unauthenticated`, ...).
    public var reason: String?
    /// For `never`: the message a decision would give.
    public var message: String?
    /// For `conditional`: the `where` expression's JSON (sorted keys), for the app to apply to its own data.
    public var whereJSON: Data?
}
