import PolicyModel

/// What the facade's decision pipeline tells an observer (the server's metrics and logs): every decision it makes,
/// and every resolution that failed. Each method has an empty default, so an observer implements what it counts.
///
/// Called on the request's task, after the decision is made and before it is recorded; an observer must be quick and
/// must not throw (it counts, it does not decide).
public protocol DecisionObserver: Sendable {
    /// A decision the pipeline made (`decide`, `explain`, each action of `check`, each item of a batch).
    func decided(_ decision: Decision)
    /// The store could not resolve a request (it did not answer, or failed); the error is thrown on to the caller.
    func resolveFailed(_ error: any Error)
    /// What the decision cache did (a hit, a miss, an eviction, an invalidation by a write).
    func cache(_ event: DecisionCacheEvent)
}

extension DecisionObserver {
    public func decided(_ decision: Decision) {}
    public func resolveFailed(_ error: any Error) {}
    public func cache(_ event: DecisionCacheEvent) {}
}

/// An observer that observes nothing: the facade's default.
public struct NoDecisionObserver: DecisionObserver {
    /// The observer that ignores every event.
    public init() {}
}

/// A request the pipeline refuses before deciding: how it names its subject does not fit how it is authenticated.
public struct DecisionRequestError: Error, Sendable, Hashable {
    /// Which refusal.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A bearer token and a named subject in one request: with a bearer the facade builds the subject.
        case subjectWithBearer = "subject_with_bearer"
        /// A named subject without a bearer, on a facade that does not trust callers to name subjects.
        case callerSubjectNotTrusted = "caller_subject_not_trusted"
    }

    /// Which refusal.
    public var kind: Kind
    /// The field at fault (`subject`, `requests[3].subject`).
    public var field: String

    /// A refusal of `kind` about `field`.
    public init(_ kind: Kind, field: String = "subject") {
        self.kind = kind
        self.field = field
    }

    /// Fixed text saying what to do instead.
    public var message: String {
        switch kind {
        case .subjectWithBearer: "with Authorization: Bearer the server builds the subject; leave 'subject' out"
        case .callerSubjectNotTrusted:
            "this server decides only for the holder of Authorization: Bearer <access token>; a backend that names the subject itself needs the server started with --trust-caller-subjects (GATEHOUSE_TRUST_CALLER_SUBJECTS=1)"
        }
    }
}
