import Foundation
import PolicyEngine
import PolicyModel
import Tracing

/// Who is asking, and about what: the only code that turns a bearer token and a resource id into the facts a decision
/// needs (single decisions, batches, checks, lists and plans all come here).
///
/// - The session and the resource's facts come through `DecisionCache.read` (memory, else one read of the store, kept
///   unless a write raced it); the identity layer supplies the read (`IdentityService.readDecisionFacts`), the key a
///   session is kept under (the token's hash) and the clock's judgement of a cached session (`isLive`).
/// - A live session seen longer ago than `lastSeenGranularity` is marked seen (a write at most once a minute); one that
///   ended meanwhile is refused.
/// - With tracing on, the resolution is one span (`gatehouse.bearer.resolve`) saying whether the session and the
///   resource came from memory and whether the bearer held.
struct SubjectResolver: Sendable {
    let identity: IdentityService
    let cache: DecisionCache

    /// `request` (its subject ignored) as the engine will judge it for the holder of `token` at `t`: the subject from
    /// the session, time `t`, and the resource's owner, members and usage when it is stored and of a shared type.
    func resolve(_ request: Request, token: String?, at t: Date, by policy: CompiledPolicy) async throws -> ResolvedRequest {
        let found = try await facts(token: token, resourceId: Self.sharedResourceId(request.resource, by: policy), at: t)
        return Self.resolved(request, bearer: found.bearer, stored: found.stored ?? nil, at: t, by: policy)
    }

    /// `request` for a bearer resolved already (a batch's, once for the whole body) at `t`: only the resource's facts
    /// are looked up.
    func resolve(_ request: Request, bearer: BearerFacts, at t: Date, by policy: CompiledPolicy) async throws -> ResolvedRequest {
        var stored: ResourceFacts?
        if let id = Self.sharedResourceId(request.resource, by: policy) {
            stored = try await cache.read(session: nil, live: { _ in false }, resource: id) { _, id in
                try await identity.readDecisionFacts(accessTokenKey: nil, resourceId: id, at: t)
            }.resource ?? nil
        }
        return Self.resolved(request, bearer: bearer, stored: stored, at: t, by: policy)
    }

    /// `request` resolved for the holder of `token` at `t` from memory alone, without an await: nil unless the session
    /// is cached, live and marked seen recently enough that no write is due (`IdentityService.isUsableWithoutWrite`),
    /// and the resource's facts, when the decision reads them, are cached too. What it returns is what `resolve` would
    /// (the same `resolved`); nil leaves the request to `resolve`, which then counts the cache's lookups.
    func resolvedFromMemory(_ request: Request, token: String, at t: Date, by policy: CompiledPolicy) -> ResolvedRequest? {
        guard let key = identity.cacheKey(accessToken: token),
            let found = cache.peek(session: key, usable: { identity.isUsableWithoutWrite($0, at: t) },
                resource: Self.sharedResourceId(request.resource, by: policy)),
            let session = found.session
        else { return nil }
        return Self.resolved(request, bearer: .live(session), stored: found.resource ?? nil, at: t, by: policy)
    }

    /// What `token` resolves to at `t`, for a batch, a list or a plan.
    func bearer(token: String, at t: Date) async throws -> BearerFacts {
        try await facts(token: token, resourceId: nil, at: t).bearer
    }

    /// What `token` resolves to at `t` (nothing without one) and the stored facts of `resourceId` (nil: none asked; a
    /// `.some(nil)` for an id the store does not know). A malformed id is `invalid_input` on `resource.id`.
    private func facts(token: String?, resourceId: String?, at t: Date) async throws -> (bearer: BearerFacts, stored: ResourceFacts??) {
        guard DecisionTracing.isActive else { return try await facts(token: token, resourceId: resourceId, at: t, span: nil) }
        return try await withSpan(DecisionTracing.Name.bearer) { span in try await facts(token: token, resourceId: resourceId, at: t, span: span) }
    }

    private func facts(token: String?, resourceId: String?, at t: Date, span: (any Span)?) async throws -> (bearer: BearerFacts, stored: ResourceFacts??) {
        // The token's key (its hash), computed once; a string that cannot be an access token is refused unread.
        let key = token.map { identity.cacheKey(accessToken: $0) }
        let found = try await cache.read(session: key ?? nil, live: { identity.isLive($0, at: t) }, resource: resourceId) { key, id in
            try await identity.readDecisionFacts(accessTokenKey: key, resourceId: id, at: t)
        }
        var bearer = BearerFacts.none
        switch key {
        case nil: break
        case .some(nil): bearer = .refused
        case .some(let key?):
            span?.attributes["gatehouse.session.cache"] = found.sessionHit ? "hit" : "miss"
            if let session = found.session, try await identity.markSeenIfDue(session, accessTokenKey: key, at: t) {
                bearer = .live(session)
            } else {
                bearer = .refused
            }
        }
        if let span {
            span.attributes["gatehouse.bearer.outcome"] = bearer.session == nil ? "refused" : "live"
            if resourceId != nil { span.attributes["gatehouse.resource.cache"] = found.resourceHit ? "hit" : "miss" }
        }
        return (bearer, found.resource)
    }

    /// The id whose stored facts a decision reads: a resource of a shared type (one the policy declares with member
    /// roles) with an id; nil for anything else (an app-wide type never reads a resource's counters).
    private static func sharedResourceId(_ resource: Resource, by policy: CompiledPolicy) -> String? {
        policy.isSharedResourceType(resource.type) ? resource.id : nil
    }

    /// The request the engine judges: the subject from the session, time `t`, owner, members and usage from the
    /// store when the resource is stored and of a shared type, else the user's own counters (none signed out).
    private static func resolved(_ request: Request, bearer: BearerFacts, stored: ResourceFacts?, at t: Date, by policy: CompiledPolicy) -> ResolvedRequest {
        var context = request.context
        context.now = t
        var resource = request.resource
        if let stored, policy.sharedResourceTypeSet.contains(stored.type) {
            resource.type = stored.type
            resource.ownerId = stored.ownerId
            resource.members = stored.members
            resource.usage = stored.usage
        } else {
            resource.ownerId = nil
            resource.members = [:]
            resource.usage = bearer.session?.userUsage ?? [:]
        }
        return ResolvedRequest(
            request: Request(subject: bearer.session?.subject ?? Subject(), action: request.action, resource: resource, context: context),
            tokenRejected: bearer == .refused)
    }
}
