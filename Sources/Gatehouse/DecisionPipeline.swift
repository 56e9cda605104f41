import Foundation
import PolicyEngine
import PolicyModel
import Synchronization
import Tracing

/// The one decision pipeline: a request as a client sends it (with or without a bearer) is resolved (the subject from
/// the session, the resource's facts from the store, time from the identity clock), decided by the policy given,
/// told to `observer`, and recorded in the decision log. The server's routes call these and only shape the answer.
///
/// The caller passes the policy (`active.policy`, read once) so that one version decides a whole body and the answer
/// can name it.
extension GatehouseService {
    /// One decision: for the bearer's subject when a token is given, else for the subject the request names (only on
    /// a facade that trusts callers to name subjects; an empty subject is a signed-out caller).
    ///
    /// Without a bearer the store is not read: nothing is awaited on the way (a record for the decision log is queued,
    /// not written). `report` learns whether the bearer was refused (unknown, expired, revoked), which the decision alone
    /// does not tell from a signed-out subject's. `origin` bounds what the request may add to the decision log.
    public func decide(
        _ request: Request, bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil, origin: DecisionOrigin? = nil
    ) async throws -> Decision {
        if let decision = try decideWithoutStore(request, bearer: bearer, by: policy, origin: origin) { return decision }
        return try await decideFromStore(request, bearer: bearer, by: policy, report: report, origin: origin)
    }

    /// The decision when it needs nothing from the store (no bearer), made without an await; nil when it does. The
    /// pipeline's first branch, a function of its own so that a batch of such requests never awaits, and the server's
    /// decide road ahead of its router (`DecideAhead`) calls it on the event loop. It throws before deciding,
    /// observing or recording anything (a caller-named subject on a facade that does not trust callers).
    public func decideWithoutStore(_ request: Request, bearer: String?, by policy: CompiledPolicy, origin: DecisionOrigin? = nil) throws -> Decision? {
        guard bearer == nil else { return nil }
        let resolved = try unbound(request)
        if DecisionTracing.isActive { return tracedDecideAndRecord(resolved, fromSession: false, by: policy, origin: origin) }
        let decision = decide(resolved, by: policy)
        observer.decided(decision)
        record(decision, of: resolved, fromSession: false, by: policy, origin: origin)
        return decision
    }

    /// A bearer's decision when its facts are all in memory (the session cached, live and not due to be marked seen; the
    /// resource's facts cached when the decision reads them), made without an await; nil when it needs the store, and
    /// then nothing was decided, observed, recorded or counted (`decide` makes it). The server's decide road ahead of
    /// its router (`DecideAhead`) calls it on the event loop. It throws, before anything, what `decide` would for a
    /// request naming a subject beside a bearer. Not taken with tracing on (the bearer's span is `resolve`'s).
    public func decideFromMemory(_ request: Request, bearer: String, by policy: CompiledPolicy, origin: DecisionOrigin? = nil) throws -> Decision? {
        try Self.refuseSubjectBesideBearer(request)
        guard !DecisionTracing.isActive,
            let resolved = subjects.resolvedFromMemory(request, token: bearer, at: identity.clock(), by: policy)
        else { return nil }
        return decideAndRecord(resolved, fromSession: true, by: policy, origin: origin)
    }

    /// The decision that reads the store: resolved, decided, observed, recorded.
    func decideFromStore(
        _ request: Request, bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil, origin: DecisionOrigin? = nil
    ) async throws -> Decision {
        decideAndRecord(try await resolve(request, bearer: bearer, by: policy, report: report), fromSession: bearer != nil, by: policy, origin: origin)
    }

    /// One decision with its trace (not recorded in the decision log).
    public func explain(_ request: Request, bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil) async throws -> Explanation {
        let explanation = explain(try await resolve(request, bearer: bearer, by: policy, report: report), by: policy)
        observer.decided(explanation.decision)
        return explanation
    }

    /// The answers of a batch, in order, every one by the same `policy`; a bad item answers its error, as does an
    /// item naming a subject when a bearer is given. A bearer is resolved once for the whole batch.
    public func decideBatch(
        _ items: [Result<Request, RequestError>], bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil,
        origin: DecisionOrigin? = nil
    ) async throws -> [Result<Decision, RequestError>] {
        var out: [Result<Decision, RequestError>] = []
        out.reserveCapacity(items.count)
        // The bearer is resolved once for the whole batch, at one time.
        let t = identity.clock()
        var facts: BearerFacts?
        if let bearer { facts = try await observingFailure { try await subjects.bearer(token: bearer, at: t) } }
        if facts == .refused { report?.noteRefused() }
        for (i, item) in items.enumerated() {
            switch item {
            case .success(let request):
                if let facts {
                    guard request.subject == Subject() else {
                        let refusal = DecisionRequestError(.subjectWithBearer, field: "requests[\(i)].subject")
                        out.append(.failure(RequestError(field: refusal.field, refusal.message)))
                        continue
                    }
                    let resolved = try await observingFailure { try await subjects.resolve(request, bearer: facts, at: t, by: policy) }
                    out.append(.success(decideAndRecord(resolved, fromSession: true, by: policy, origin: origin)))
                } else if let decision = try decideWithoutStore(request, bearer: nil, by: policy, origin: origin) {
                    out.append(.success(decision))
                } else {
                    out.append(.success(try await decideFromStore(request, bearer: nil, by: policy, origin: origin)))
                }
            case .failure(let error):
                out.append(.failure(error))
            }
        }
        return out
    }

    /// One subject and resource, many actions: the subject and the resource's facts are resolved once.
    public func check(
        _ check: CheckEnvelope, bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil, origin: DecisionOrigin? = nil
    ) async throws -> [(action: String, decision: Decision)] {
        guard let first = check.actions.first else { return [] }
        var request = check.request
        request.action = first
        var resolved = try await resolve(request, bearer: bearer, by: policy, report: report)
        var out: [(action: String, decision: Decision)] = []
        out.reserveCapacity(check.actions.count)
        for action in check.actions {
            resolved.request.action = action
            out.append((action, decideAndRecord(resolved, fromSession: bearer != nil, by: policy, origin: origin)))
        }
        return out
    }

    /// Decides a resolved request, tells the observer, and offers the decision to the log (never waiting for it).
    /// `fromSession`: the subject came from a bearer's session.
    func decideAndRecord(_ resolved: ResolvedRequest, fromSession: Bool, by policy: CompiledPolicy, origin: DecisionOrigin? = nil) -> Decision {
        if DecisionTracing.isActive { return tracedDecideAndRecord(resolved, fromSession: fromSession, by: policy, origin: origin) }
        let decision = decide(resolved, by: policy)
        observer.decided(decision)
        record(decision, of: resolved, fromSession: fromSession, by: policy, origin: origin)
        return decision
    }

    /// `decideAndRecord` with tracing on: the decision and the offer to the decision log each in a span of their own.
    private func tracedDecideAndRecord(_ resolved: ResolvedRequest, fromSession: Bool, by policy: CompiledPolicy, origin: DecisionOrigin?) -> Decision {
        let decision = withSpan(DecisionTracing.Name.decide) { span in
            let decision = decide(resolved, by: policy)
            DecisionTracing.describe(span, decision, of: resolved.request, by: policy)
            if resolved.tokenRejected { span.attributes["gatehouse.bearer.refused"] = true }
            return decision
        }
        observer.decided(decision)
        withSpan(DecisionTracing.Name.record) { _ in
            record(decision, of: resolved, fromSession: fromSession, by: policy, origin: origin)
        }
        return decision
    }

    /// The request the engine judges: from the bearer's session and the store, else as the request names it.
    func resolve(_ request: Request, bearer: String?, by policy: CompiledPolicy, report: BearerReport? = nil) async throws -> ResolvedRequest {
        guard let bearer else { return try unbound(request) }
        try Self.refuseSubjectBesideBearer(request)
        let t = identity.clock()
        let resolved = try await observingFailure { try await subjects.resolve(request, token: bearer, at: t, by: policy) }
        if resolved.tokenRejected { report?.noteRefused() }
        return resolved
    }

    /// A request with a bearer names no subject: the bearer's session is the subject.
    static func refuseSubjectBesideBearer(_ request: Request) throws(DecisionRequestError) {
        guard request.subject == Subject() else { throw DecisionRequestError(.subjectWithBearer) }
    }

    /// A request decided for the subject it carries, at its `context.now` or the identity clock's; a named subject
    /// only when this facade trusts callers to name one.
    func unbound(_ request: Request) throws(DecisionRequestError) -> ResolvedRequest {
        guard trustsCallerSubjects || request.subject == Subject() else { throw DecisionRequestError(.callerSubjectNotTrusted) }
        var r = request
        if r.context.now == nil { r.context.now = identity.clock() }
        return ResolvedRequest(request: r, tokenRejected: false)
    }

    /// Runs a store read, telling the observer when it fails.
    func observingFailure<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            observer.resolveFailed(error)
            throw error
        }
    }
}

/// Whether a request's bearer was refused (unknown, expired or revoked), for the caller to say so beside the answer:
/// the decision routes decide for a signed-out subject then, and their answer alone does not tell that from a
/// session whose subject is signed out (an anonymous one). One per request; written by the pipeline.
public final class BearerReport: Sendable {
    private let state = Mutex(false)

    /// A report with nothing refused yet.
    public init() {}

    /// A report for a request with `bearer`; none without one (nothing to refuse, and no allocation on the path of a
    /// caller-named subject).
    public static func forRequest(_ bearer: String?) -> BearerReport? { bearer == nil ? nil : BearerReport() }

    /// The bearer was refused.
    public var refused: Bool { state.withLock { $0 } }

    func noteRefused() { state.withLock { $0 = true } }
}
