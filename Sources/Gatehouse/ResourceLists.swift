import Foundation
import Identity
import PolicyEngine
import PolicyModel

/// One page of `GatehouseService.resources(token:type:action:cursor:limit:)`: ids, and the cursor of the next page.
public struct ResourceList: Sendable, Hashable {
    /// The ids of the resources the user may act on, in the store's id order.
    public var ids: [String]
    /// The opaque cursor that asks for the page after this one; nil on the last page.
    public var nextCursor: String?

    /// A page of `ids`, `nextCursor` when more follow.
    public init(ids: [String], nextCursor: String?) {
        self.ids = ids
        self.nextCursor = nextCursor
    }
}

extension GatehouseService {
    /// How many ids a list page holds when the caller names no limit.
    public static let defaultListLimit = 100

    /// The stored resources of `type` on which the holder of `token` may take `action`, one page at a time: each id
    /// is one `decide(token:action:resource:)` would allow, found by one query on the store from the policy's plan
    /// (`CompiledPolicy.plan`), never by deciding resource by resource.
    ///
    /// The subject is the session's, resolved as decisions resolve it (the cache, then the store); time is the
    /// identity clock. `cursor` is a page's `nextCursor` (nil: the first page); it is bound to `type` and `action`, so a
    /// cursor of another list is refused (`invalid_input` on `cursor`). `limit` is 1 to
    /// `IdentityService.maximumListLimit`. A refused token is `unauthenticated`; a type that is not one of the policy's
    /// shared types (the only ones the store holds facts for) is `invalid_input` on `type`, an action the type does not
    /// declare `invalid_input` on `action`.
    public func resources(token: String, type: String, action: String, cursor: String? = nil, limit: Int = defaultListLimit) async throws
        -> ResourceList
    {
        let policy = self.policy
        try Self.checkListable(type: type, action: action, by: policy)
        let after = try cursor.map { try ListCursor.lastId(in: $0, type: type, action: action) }
        let t = identity.clock()
        guard case .live(let session) = try await observingFailure({ try await subjects.bearer(token: token, at: t) }) else {
            throw IdentityError(.unauthenticated, field: "token", "unknown, expired or revoked session")
        }
        let plan = policy.plan(subject: session.subject, action: action, resourceType: type, context: Context(now: t))
        let page = try await identity.resourceIds(type: type, plan: plan, after: after, limit: limit)
        let next = page.hasMore ? page.ids.last.map { ListCursor.make(lastId: $0, type: type, action: action) } : nil
        return ResourceList(ids: page.ids, nextCursor: next)
    }

    /// The plan of `action` over every resource of `resourceType`: for the holder of `bearer` (the session's subject,
    /// the identity clock, as decisions by token), else for `subject` as named (only on a facade that trusts callers to
    /// name subjects; an empty subject is a signed-out caller) at `context.now` or the clock. A refused token's plan
    /// is `never` with the `unauthenticated` decision, as `decide` answers it. An unknown type or action is
    /// `invalid_input` naming `resourceType` or `action`.
    public func plan(
        bearer: String?, subject: Subject = Subject(), action: String, resourceType: String, context: Context = Context(), by policy: CompiledPolicy? = nil,
        report: BearerReport? = nil
    ) async throws -> ResourcePlan {
        let policy = policy ?? self.policy
        guard policy.resourceTypeNames.contains(resourceType) else {
            throw IdentityError(.invalidInput, field: "resourceType", "must be one of \(policy.resourceTypeNames.joined(separator: ", "))")
        }
        try Self.checkAction(action, of: resourceType, by: policy)
        guard let bearer else {
            let resolved = try unbound(Request(subject: subject, action: action, resource: Resource(type: resourceType), context: context))
            return policy.plan(subject: resolved.request.subject, action: action, resourceType: resourceType, context: resolved.request.context)
        }
        guard subject == Subject() else { throw DecisionRequestError(.subjectWithBearer) }
        let t = identity.clock()
        guard case .live(let session) = try await observingFailure({ try await subjects.bearer(token: bearer, at: t) }) else {
            report?.noteRefused()
            let decision = policy.signedOutDecision(resourceType: resourceType, action: action)
            return .never(reason: decision.reason, message: decision.message)
        }
        var now = context
        now.now = t
        return policy.plan(subject: session.subject, action: action, resourceType: resourceType, context: now)
    }

    /// Refuses a list the store cannot answer: a type it holds no facts for, or an action the type does not declare.
    static func checkListable(type: String, action: String, by policy: CompiledPolicy) throws {
        guard policy.isSharedResourceType(type) else {
            let shared = policy.sharedResourceTypes
            throw IdentityError(
                .invalidInput, field: "type",
                shared.isEmpty ? "this policy set declares no shared resource types" : "must be one of \(shared.joined(separator: ", "))")
        }
        try checkAction(action, of: type, by: policy)
    }

    /// Refuses an action `type` does not declare, naming `action` and the ones it does.
    static func checkAction(_ action: String, of type: String, by policy: CompiledPolicy) throws {
        let actions = policy.actionNames(of: type)
        guard actions.contains(action) else { throw IdentityError(.invalidInput, field: "action", "must be one of \(actions.joined(separator: ", "))") }
    }
}

/// The opaque cursor of a resource list: base64url of `1`, the type, the action and the page's last id, NUL-separated
/// (none of them holds a NUL). Bound to its list: a cursor of another type or action is refused.
package enum ListCursor {
    /// The cursor after `lastId` in the list of `type` and `action`.
    package static func make(lastId: String, type: String, action: String) -> String {
        let text = ["1", type, action, lastId].joined(separator: "\u{0}")
        return SecretCoding.base64URL(text.utf8)
    }

    /// The last id of the page `cursor` ends, if it is a cursor of this list.
    package static func lastId(in cursor: String, type: String, action: String) throws(IdentityError) -> String {
        let refused = IdentityError(.invalidInput, field: "cursor", "not a cursor of this list (a nextCursor of the same type and action)")
        guard cursor.utf8.count <= 2048 else { throw refused }
        guard let data = SecretCoding.fromBase64URL(cursor) else { throw refused }
        // The cursor as made, compared byte by byte: a NUL is a grapheme of its own, so its bytes split where the text's
        // characters would, and equal bytes are equal strings. Anything else takes the text's own comparison below.
        let bytes = [UInt8](data)
        let fields = bytes.split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
        if fields.count == 4, fields[0].elementsEqual("1".utf8), fields[1].elementsEqual(type.utf8), fields[2].elementsEqual(action.utf8),
            !fields[3].isEmpty, !fields[3].contains(0), let lastId = String(validating: fields[3], as: UTF8.self)
        {
            return lastId
        }
        guard let text = String(data: data, encoding: .utf8) else { throw refused }
        let parts = text.split(separator: "\u{0}", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "1", parts[1] == type, parts[2] == action, !parts[3].isEmpty else { throw refused }
        return String(parts[3])
    }
}
