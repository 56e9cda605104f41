import Foundation
import PolicyModel

/// A (resource type, action) pair a compiled policy knows. Meaningful only to the policy that gave it.
public struct ActionID: Sendable, Hashable {
    let slot: Int32
}

/// A tier of a compiled policy. Meaningful only to the policy that gave it.
public struct TierID: Sendable, Hashable {
    let index: Int32
}

/// An app role some action of a compiled policy requires. Meaningful only to the policy that gave it.
public struct AppRoleID: Sendable, Hashable {
    let index: Int32
    init(_ index: Int32) { self.index = index }
}

/// A member role of a resource type of a compiled policy. Meaningful only to the policy that gave it.
public struct MemberRoleID: Sendable, Hashable {
    let index: Int32
}

/// One of `AuthMethod.all`.
public struct AuthMethodID: Sendable, Hashable {
    let index: UInt8
}

/// The app roles a subject holds that the policy knows.
public struct AppRoleSet: Sendable, Hashable {
    private var low: UInt64 = 0
    /// Roles past the 64th, rare: an empty array costs nothing.
    private var high: [Int32] = []

    /// An empty set.
    public init() {}

    /// Adds a role.
    public mutating func insert(_ role: AppRoleID) {
        if role.index < 64 {
            low |= 1 << UInt64(role.index)
        } else if !high.contains(role.index) {
            high.append(role.index)
        }
    }

    /// Whether the set holds `role`.
    public func contains(_ role: AppRoleID) -> Bool {
        role.index < 64 ? low & (1 << UInt64(role.index)) != 0 : high.contains(role.index)
    }

    @inline(__always)
    func intersects(_ other: AppRoleSet) -> Bool {
        if low & other.low != 0 { return true }
        if high.isEmpty || other.high.isEmpty { return false }
        return high.contains(where: other.high.contains)
    }
}

/// The request field that names a resource's owner.
public enum OwnerSource: Sendable, Hashable {
    /// `resource.ownerId`.
    case ownerId
    /// `resource.attributes.NAME`, when it holds a string.
    case resourceAttribute(String)
}

/// The subject's standing on the resource, as the policy's owner field and member roles see it.
public enum Standing: Sendable, Hashable {
    /// Neither the owner nor a member (or signed out: standing is ignored then).
    case none
    /// The resource's owner field names the subject.
    case owner
    /// A member with this role; nil for a role the policy does not know (it grants only what every member gets).
    case member(MemberRoleID?)
}

/// A request in a compiled policy's own vocabulary: names as the policy's integers, so deciding compares no
/// strings and hashes nothing. Made by `PolicyVocabulary.intern(_:)`, or field by field by a reader that looks
/// names up with the vocabulary's byte-level lookups. `CompiledPolicy.decide(_:)` over it gives the same decision
/// as over the `Request` it stands for.
public struct InternedRequest: Sendable {
    /// The (type, action) pair; nil when the policy does not know it (`default_deny`).
    public var action: ActionID?
    /// `Subject.isSignedIn`: an id that is not empty, and an auth method other than `anonymous`.
    public var signedIn: Bool
    /// The subject's tier; nil when it has none or one the policy does not know.
    public var tier: TierID?
    /// When the subscription lapses; nil when it does not.
    public var subscriptionExpiry: Date? {
        get { subscriptionExpirySeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
        set { subscriptionExpirySeconds = newValue?.timeIntervalSinceReferenceDate }
    }
    /// nil when the subject has no auth block.
    public var authMethod: AuthMethodID?
    /// When the subject was verified; nil when unknown.
    public var verifiedAt: Date? {
        get { verifiedAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
        set { verifiedAtSeconds = newValue?.timeIntervalSinceReferenceDate }
    }
    /// The app roles the subject holds that the policy knows.
    public var appRoles: AppRoleSet
    /// The subject's standing on the resource.
    public var standing: Standing
    /// The value of the counter the action's limit reads (`PolicyVocabulary.limitCounter(of:)`), 0 when absent.
    public var used: Int
    /// `context.now`; nil means the clock's now.
    public var now: Date? {
        get { nowSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
        set { nowSeconds = newValue?.timeIntervalSinceReferenceDate }
    }
    // Instants as seconds since the reference date, as `Request` keeps them, so the layout is fixed at compile time.
    private var subscriptionExpirySeconds: Double?
    private var verifiedAtSeconds: Double?
    private var nowSeconds: Double?
    /// The request as `Request`, for actions whose rules or consent have conditions (they may read any field,
    /// attributes included). Required when `PolicyVocabulary.readsRequest(_:)` says so; ignored otherwise.
    public var request: Request?

    /// A request from its interned parts.
    public init(
        action: ActionID?, signedIn: Bool = false, tier: TierID? = nil, subscriptionExpiry: Date? = nil, authMethod: AuthMethodID? = nil,
        verifiedAt: Date? = nil, appRoles: AppRoleSet = AppRoleSet(), standing: Standing = .none, used: Int = 0, now: Date? = nil,
        request: Request? = nil
    ) {
        self.action = action
        self.signedIn = signedIn
        self.tier = tier
        self.subscriptionExpirySeconds = subscriptionExpiry?.timeIntervalSinceReferenceDate
        self.authMethod = authMethod
        self.verifiedAtSeconds = verifiedAt?.timeIntervalSinceReferenceDate
        self.appRoles = appRoles
        self.standing = standing
        self.used = used
        self.nowSeconds = now?.timeIntervalSinceReferenceDate
        self.request = request
    }
}

/// The names a compiled policy knows, as integers: what a reader needs to build an `InternedRequest`.
///
/// Each lookup has a `String` form and a UTF-8 form for readers that have not built Strings. ASCII names are
/// found by a word-at-a-time hash and a byte compare; any other name is compared by canonical equivalence, as
/// `decide(Request)` compares it.
public struct PolicyVocabulary: Sendable {
    let table: DecisionTable

    /// The (type, action) pair by name; nil when the policy does not know it.
    public func action(type: String, action: String) -> ActionID? {
        table.slot(type: type, action: action).map { ActionID(slot: Int32($0)) }
    }

    /// The (type, action) pair by UTF-8 names.
    public func action(type: UnsafeRawBufferPointer, action: UnsafeRawBufferPointer) -> ActionID? {
        switch table.actionTable.lookup(type: type, action: action) {
        case .found(let slot): return ActionID(slot: Int32(slot))
        case .absent: return nil
        case .notASCII: return self.action(type: String(decoding: type, as: UTF8.self), action: String(decoding: action, as: UTF8.self))
        }
    }

    /// The tier by name; nil for an unknown tier.
    public func tier(_ name: String) -> TierID? { table.tierSlot(name).map { TierID(index: Int32($0)) } }
    /// The tier by UTF-8 name.
    public func tier(utf8 name: UnsafeRawBufferPointer) -> TierID? { table.tierNames.index(utf8: name).map { TierID(index: Int32($0)) } }

    /// The app role by name; nil for one no action requires.
    public func appRole(_ name: String) -> AppRoleID? { table.appRoleNames.index(of: name).map { AppRoleID(Int32($0)) } }
    /// The app role by UTF-8 name.
    public func appRole(utf8 name: UnsafeRawBufferPointer) -> AppRoleID? { table.appRoleNames.index(utf8: name).map { AppRoleID(Int32($0)) } }

    /// The member role by name; nil for an unknown role.
    public func memberRole(_ name: String) -> MemberRoleID? { table.memberRoleNames.index(of: name).map { MemberRoleID(index: Int32($0)) } }
    /// The member role by UTF-8 name.
    public func memberRole(utf8 name: UnsafeRawBufferPointer) -> MemberRoleID? {
        table.memberRoleNames.index(utf8: name).map { MemberRoleID(index: Int32($0)) }
    }

    /// The auth method by name; nil for an unknown method.
    public func authMethod(_ name: String) -> AuthMethodID? { AuthMethod.all.firstIndex(of: name).map { AuthMethodID(index: UInt8($0)) } }
    /// The auth method by UTF-8 name.
    public func authMethod(utf8 name: UnsafeRawBufferPointer) -> AuthMethodID? {
        authMethod(String(decoding: name, as: UTF8.self))
    }

    /// The usage counter the action's limit reads, nil when it has no limit.
    public func limitCounter(of action: ActionID) -> String? {
        entry(action).flatMap { $0.limitCaps == nil ? nil : $0.limitCounter }
    }

    /// Which request field names the owner of the action's resource type, nil when the type has no owner: a reader
    /// sets `InternedRequest.standing` to `.owner` when that field's bytes equal the subject id's, with no hashing.
    public func owner(of action: ActionID) -> OwnerSource? {
        switch entry(action)?.owner {
        case .ownerId?: return .ownerId
        case .attribute(let name)?: return .resourceAttribute(name)
        case nil: return nil
        }
    }

    /// Whether deciding the action evaluates conditions, which read `InternedRequest.request`.
    public func readsRequest(_ action: ActionID) -> Bool {
        entry(action)?.hasConditions ?? false
    }

    /// The request in this policy's vocabulary. `decide` over the result equals `decide(request)`.
    public func intern(_ request: Request) -> InternedRequest {
        let subject = request.subject
        let slot = table.slot(type: request.resource.type, action: request.action)
        var interned = InternedRequest(
            action: slot.map { ActionID(slot: Int32($0)) }, signedIn: subject.isSignedIn, tier: subject.tier.flatMap { self.tier($0) },
            subscriptionExpiry: subject.subscriptionExpiry, authMethod: subject.auth.flatMap { self.authMethod($0.method) },
            verifiedAt: subject.auth?.verifiedAt, now: request.context.now)
        for role in subject.roles { appRole(role).map { interned.appRoles.insert($0) } }
        guard let slot else { return interned }
        let entry = table.entries[slot]
        if interned.signedIn, let id = subject.id {
            if let owner = entry.owner, owner.read(request.resource) == id {
                interned.standing = .owner
            } else if let role = request.resource.members[id] {
                interned.standing = .member(memberRole(role))
            }
        }
        if entry.limitCaps != nil { interned.used = request.resource.usage[entry.limitCounter] ?? 0 }
        if entry.hasConditions { interned.request = request }
        return interned
    }

    func entry(_ action: ActionID) -> ActionEntry? {
        Int(action.slot) < table.entries.count && action.slot >= 0 ? table.entries[Int(action.slot)] : nil
    }
}

extension CompiledPolicy {
    /// The policy's names as integers, for building `InternedRequest`s.
    public var vocabulary: PolicyVocabulary { PolicyVocabulary(table: table) }
}
