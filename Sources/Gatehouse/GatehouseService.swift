import Foundation
@_exported import Identity
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Synchronization

/// The facade: a session token to a `Subject`, the resource's members and usage from the store,
/// and a decision from the current compiled policy.
///
/// The active policy and its version are one value (`ActivePolicy`) swapped in one step by `install`; a set that
/// fails to compile never replaces a working one. The engine call itself takes no lock: the lock only guards
/// reading which policy is current. Every decision goes through one pipeline (resolve, decide, observe, record;
/// `DecisionPipeline.swift`), which tells `observer` what it decided.
public final class GatehouseService: Sendable {
    /// The identity layer the facade builds subjects from: sessions, users, memberships, usage, the logs.
    public let identity: IdentityService
    /// Which decisions are recorded in the decision log.
    public var decisionLog: DecisionLogMode { recorder.mode }
    /// The decision log's queue: records are offered on the answer's path and written in batches off it.
    public let recorder: DecisionRecorder
    /// A candidate set decided beside the live one after each answer (`policy serve --shadow`); nil without one.
    public let shadow: ShadowEvaluator?
    /// Whether a request without a bearer may name its own subject (a backend that authenticated its user itself).
    /// Off: such a request is refused (`DecisionRequestError.Kind.callerSubjectNotTrusted`).
    public let trustsCallerSubjects: Bool
    /// Told of every decision the pipeline makes and every resolution that failed (the server's metrics).
    public let observer: any DecisionObserver
    /// Who is asking: a bearer and a resource id to the facts a decision needs, through the decision cache (the live
    /// sessions and stored resources bearer decisions need, invalidated by every write that changes them).
    let subjects: SubjectResolver
    private let current: Mutex<ActivePolicy>

    /// A facade deciding by `policy` (until `reload` or `install` swaps another in), building subjects through
    /// `identity`, recording decisions as `recording` says (`decisionLog`, when given, replaces its mode), telling
    /// `observer` what it decides, keeping at most `cacheCapacity` sessions and as many resources in memory (0: none;
    /// every bearer decision reads the store).
    public init(
        policy: CompiledPolicy, version: PolicyVersion? = nil, identity: IdentityService, decisionLog: DecisionLogMode? = nil,
        recording: DecisionRecording = DecisionRecording(), shadow: ShadowEvaluator? = nil, trustCallerSubjects: Bool = false,
        observer: any DecisionObserver = NoDecisionObserver(), cacheCapacity: Int = GatehouseService.defaultCacheCapacity
    ) {
        self.identity = identity
        var recording = recording
        if let decisionLog { recording.mode = decisionLog }
        self.recorder = DecisionRecorder(identity: identity, settings: recording)
        self.shadow = shadow
        self.trustsCallerSubjects = trustCallerSubjects
        self.observer = observer
        let cache = DecisionCache(capacity: max(0, cacheCapacity), observer: observer, changes: identity.factChanges)
        self.subjects = SubjectResolver(identity: identity, cache: cache)
        self.current = Mutex(ActivePolicy(policy: policy, version: version ?? PolicyVersion(of: policy)))
        identity.factChanges.subscribe { changes in cache.invalidate(changes) }
    }

    /// How many sessions (and as many resources) the decision cache keeps by default.
    public static let defaultCacheCapacity = 10_000

    /// The policy deciding now and its version, read together.
    public var active: ActivePolicy { current.withLock { $0 } }

    /// The policy deciding now.
    public var policy: CompiledPolicy { current.withLock { $0.policy } }

    /// Swaps in `policy` and its `version` in one step: the only way the active policy changes.
    public func install(_ policy: CompiledPolicy, version: PolicyVersion) {
        let next = ActivePolicy(policy: policy, version: version)
        current.withLock { $0 = next }
    }

    /// Swaps in a policy compiled elsewhere, as a version loaded now.
    public func install(_ policy: CompiledPolicy) {
        install(policy, version: PolicyVersion(of: policy))
    }

    /// Compiles the policy set in `directory` and swaps it in (through `install`); on errors the working policy
    /// stays and the diagnostics are returned.
    @discardableResult
    public func reload(directory: String) -> [Diagnostic] {
        let fingerprint = FolderFingerprint.of(directory)
        let result = PolicyCompiler.load(directory: directory)
        if let fresh = result.policy {
            install(fresh, version: PolicyVersion(of: fresh, files: result.sources.keys.sorted(), fingerprint: fingerprint))
        }
        return result.diagnostics
    }

    /// Who holds `token`: `.signedOut` for no token, `.signedIn` with the session's subject for a live one,
    /// `.refused` for a token that is unknown, expired or revoked (or whose user was deleted). A refused
    /// token is not a signed-out caller: the app should refresh or sign in again, so decisions for it are
    /// `unauthenticated`. Storage failures are thrown.
    public func subject(token: String?) async throws -> TokenSubject {
        guard let token else { return .signedOut }
        do {
            return .signedIn(try await identity.subject(accessToken: token))
        } catch let error as IdentityError where error.code == .unauthenticated {
            return .refused
        }
    }

    /// Decides whether the holder of `token` may take `action` on `resource`: the entry point for
    /// requests from apps, which are not trusted with facts the server holds.
    ///
    /// - No token: decided for a signed-out subject (browsing without an account).
    /// - A token that is unknown, expired or revoked (or whose user was deleted): `unauthenticated`,
    ///   so the app knows to sign in again; never an error.
    /// - Time is always the identity clock; `context.now` from the caller is ignored.
    /// - A resource of a shared type (one the policy declares with member roles) with an id the store knows, as a
    ///   resource of such a type, gets its type, owner, members and usage from the store.
    ///   Any other resource (an app-wide action, an id the store does not know, a stored resource of a type without
    ///   member roles) has no owner and no members, and its usage is the signed-in user's own counters from the
    ///   store (`incrementUserUsage`); none for a signed-out caller. So no resource id, whoever owns it, stands in
    ///   for the user's own counters in an app-wide limit.
    /// - What the caller may assert: `action`, `resource.id`, `resource.type` (for resources the
    ///   store does not know), `resource.attributes` and `context.attributes`. Policies must treat
    ///   those as claims, e.g. an amount the app reports.
    ///
    /// In-process code that holds every fact itself can call `decide(_:)` with a full `Request`.
    public func decide(token: String?, action: String, resource: Resource, context: Context = Context()) async throws -> Decision {
        let policy = self.policy
        let resolved = try await observingFailure { try await resolve(token: token, action: action, resource: resource, context: context, by: policy) }
        return decideAndRecord(resolved, fromSession: token != nil, by: policy)
    }

    /// The request the engine judges for the holder of `token`, built by the rules of
    /// `decide(token:action:resource:context:)`: the subject from the session, time from the identity
    /// clock, owner, members and usage from the store. The server decides batches with it, so that
    /// one policy version decides a whole batch.
    public func resolve(
        token: String?, action: String, resource: Resource, context: Context = Context(), by policy: CompiledPolicy? = nil
    ) async throws -> ResolvedRequest {
        try await subjects.resolve(Request(action: action, resource: resource, context: context), token: token, at: identity.clock(), by: policy ?? self.policy)
    }

    /// The decision on a resolved request by `policy`: `unauthenticated` whenever the token was rejected.
    public func decide(_ resolved: ResolvedRequest, by policy: CompiledPolicy) -> Decision {
        resolved.tokenRejected ? Self.signedOut(resolved, by: policy) : policy.decide(resolved.request)
    }

    /// The decision with its trace on a resolved request by `policy`.
    public func explain(_ resolved: ResolvedRequest, by policy: CompiledPolicy) -> Explanation {
        var explanation = policy.explain(resolved.request)
        if resolved.tokenRejected { explanation.decision = Self.signedOut(resolved, by: policy) }
        return explanation
    }

    /// Offers `decision` to the shadow candidate (if any), and to the decision log when the mode asks for it: queued without waiting, written off the answer's
    /// path (`DecisionRecorder`). A decision for no live session is recorded only when `DecisionRecording.signedOut`
    /// says so.
    @inline(__always)
    public func record(_ decision: Decision, of resolved: ResolvedRequest, fromSession: Bool, by policy: CompiledPolicy, origin: DecisionOrigin? = nil) {
        shadow?.offer(resolved.request, live: decision, tokenRejected: resolved.tokenRejected)
        guard recorder.wants(decision) else { return }
        recorder.offer(decision, of: resolved.request, fromSession: fromSession && !resolved.tokenRejected, by: policy, origin: origin)
    }

    /// Waits until every decision recorded so far is written to the store (or dropped and counted): before an export
    /// or an erasure reads or clears a user's records, and at shutdown (`recorder.close()`).
    public func flushDecisionRecords() async {
        await recorder.flush()
    }

    /// Creates a shared space owned by the holder of `accessToken`: only of a type the policy serving now declares
    /// with member roles (an `app` resource would give its creator fresh, empty counters). `type` nil picks the
    /// policy's `space` type, else its only shared type.
    public func createSpace(accessToken: String, name: String, type: String?, inviteRole: String) async throws -> NewSpace {
        let shared = policy.sharedResourceTypes
        let chosen = type ?? (shared.contains("space") || shared.count != 1 ? "space" : shared[0])
        guard shared.contains(chosen) else {
            throw IdentityError(
                .invalidInput, field: "type", shared.isEmpty ? "this policy set declares no shared resource types" : "must be one of \(shared.joined(separator: ", "))")
        }
        return try await identity.createSpace(accessToken: accessToken, name: name, type: chosen, inviteRole: inviteRole)
    }

    /// A rejected token's decision: always a deny for the reason `unauthenticated`, in the policy's words.
    private static func signedOut(_ resolved: ResolvedRequest, by policy: CompiledPolicy) -> Decision {
        policy.signedOutDecision(resourceType: resolved.request.resource.type, action: resolved.request.action)
    }

    /// Decides a full request as given, trusting every fact in it (subject, owner, members, usage,
    /// time): for in-process callers that hold those facts themselves. Nothing is logged.
    public func decide(_ request: Request) -> Decision {
        policy.decide(request)
    }
}

/// Who holds a session token, as `GatehouseService.subject(token:)` finds it.
public enum TokenSubject: Sendable, Hashable {
    /// No token was given: a signed-out caller, browsing without an account.
    case signedOut
    /// A live session: its subject (tier, roles, how and when it was verified, privacy settings).
    case signedIn(Subject)
    /// A token was given but is unknown, expired or revoked, or its user was deleted.
    case refused

    /// The subject the engine judges: the session's, else a signed-out one (a refused token's decisions are
    /// `unauthenticated` whatever this subject may do; see `ResolvedRequest.tokenRejected`).
    public var subject: Subject {
        if case .signedIn(let subject) = self { return subject }
        return Subject()
    }
}

/// A request as the engine will judge it for a token holder, and whether the token was rejected.
public struct ResolvedRequest: Sendable {
    /// The request the engine judges: the subject from the session, facts from the store, time from the clock.
    public var request: Request
    /// A token was presented but is unknown, expired or revoked: every decision is `unauthenticated`.
    public var tokenRejected: Bool

    /// A resolved request; `tokenRejected` makes every decision on it `unauthenticated`.
    public init(request: Request, tokenRejected: Bool) {
        self.request = request
        self.tokenRejected = tokenRejected
    }
}

/// What a request's bearer token resolved to.
enum BearerFacts: Sendable, Equatable {
    /// No token: a signed-out caller.
    case none
    /// A token that is unknown, expired, idle or revoked: every decision is `unauthenticated`.
    case refused
    /// A live session.
    case live(SessionFacts)

    var session: SessionFacts? {
        if case .live(let facts) = self { return facts }
        return nil
    }
}
