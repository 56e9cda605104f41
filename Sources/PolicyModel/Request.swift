import Foundation

/// One authorization question: may this subject take this action on this resource?
///
/// The Swift shape mirrors the request JSON of the decision contract (`docs/decision-contract.md`).
public struct Request: Sendable, Hashable {
    /// Who asks.
    public var subject: Subject
    /// The action's name, as the policy declares it on the resource type.
    public var action: String
    /// What the action is taken on.
    public var resource: Resource
    /// When, and other facts about the moment.
    public var context: Context

    /// A request; the subject defaults to signed out and the context to the clock's now.
    public init(subject: Subject = Subject(), action: String, resource: Resource, context: Context = Context()) {
        self.subject = subject
        self.action = action
        self.resource = resource
        self.context = context
    }
}

/// Who is asking: identity, subscription, app roles, how they were verified, and settings.
public struct Subject: Sendable, Hashable {
    /// The user id; `nil` (or empty) means signed out.
    public var id: String?
    /// The subscription tier the user holds, before expiry is applied.
    public var tier: String?
    /// When the subscription lapses; `nil` means it does not.
    public var subscriptionExpiry: Date?
    /// App roles such as `customer` or `admin`.
    public var roles: [String]
    /// How and when the subject was last verified; `nil` for an id with no auth block.
    public var auth: Authentication?
    /// Free-form settings (privacy choices and the like), typed by the policy's `subject.attributes` schema.
    public var attributes: [String: Value]

    /// A subject; every field is optional, so `Subject()` is signed out.
    public init(
        id: String? = nil, tier: String? = nil, subscriptionExpiry: Date? = nil, roles: [String] = [],
        auth: Authentication? = nil, attributes: [String: Value] = [:]
    ) {
        self.id = id
        self.tier = tier
        self.subscriptionExpiry = subscriptionExpiry
        self.roles = roles
        self.auth = auth
        self.attributes = attributes
    }

    /// Whether the subject counts as signed in: it has an id and its auth method is not `anonymous`.
    @inlinable @inline(__always)
    public var isSignedIn: Bool {
        guard let id, !id.isEmpty else { return false }
        // Unwrapped, not compared as `auth?.method != ...`: comparing the optionals made the optimiser copy the whole
        // `Optional<Authentication>` through its value witnesses, ~170 instructions per call (a sixth of `decide`).
        guard let method = auth?.method else { return true }
        return method != AuthMethod.anonymous
    }
}

/// How a subject proved who it is, and when.
public struct Authentication: Sendable, Hashable {
    /// One of `AuthMethod`'s names; an unknown name is kept and matches no requirement.
    public var method: String
    /// When the subject was verified; nil when unknown (freshness requirements then fail).
    public var verifiedAt: Date?

    /// An authentication by `method` at `verifiedAt`.
    public init(method: String, verifiedAt: Date? = nil) {
        self.method = method
        self.verifiedAt = verifiedAt
    }
}

/// The verification methods Gatehouse knows.
public enum AuthMethod {
    /// A session without an identity: counts as signed out.
    public static let anonymous = "anonymous"
    /// Sign in with Apple.
    public static let apple = "apple"
    /// Username and PIN.
    public static let pin = "pin"
    /// A device key standing in for Face ID or Touch ID.
    public static let biometric = "biometric"
    /// A password.
    public static let password = "password"

    /// Every known method, in the order documentation lists them.
    public static let all = [anonymous, apple, pin, biometric, password]
}

/// What the action is taken on.
public struct Resource: Sendable, Hashable {
    /// The resource type's name, as the policy declares it.
    public var type: String
    /// The resource's id, for conditions that read `resource.id`.
    public var id: String?
    /// The owner's user id, for types whose owner field is `ownerId`.
    public var ownerId: String?
    /// User id to resource role (`viewer`, `editor`, ...).
    public var members: [String: String]
    /// Counters consumed by limits, e.g. `sources: 49`.
    public var usage: [String: Int]
    /// Free-form facts about the resource, typed by the policy's `resource.attributes` schema.
    public var attributes: [String: Value]

    /// A resource of `type`; every other field is optional.
    public init(
        type: String, id: String? = nil, ownerId: String? = nil, members: [String: String] = [:],
        usage: [String: Int] = [:], attributes: [String: Value] = [:]
    ) {
        self.type = type
        self.id = id
        self.ownerId = ownerId
        self.members = members
        self.usage = usage
        self.attributes = attributes
    }
}

/// Facts about the moment of the request.
public struct Context: Sendable, Hashable {
    /// The instant the decision is made at; `nil` means the clock's now.
    public var now: Date?
    /// Free-form facts about the moment, typed by the policy's `context.attributes` schema.
    public var attributes: [String: Value]

    /// A context at `now` (the clock's now when nil).
    public init(now: Date? = nil, attributes: [String: Value] = [:]) {
        self.now = now
        self.attributes = attributes
    }
}
