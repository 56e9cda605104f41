import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Synchronization

/// A candidate policy set decided beside the live one (`policy serve --shadow DIR`), after the answer: every decision
/// the pipeline makes is offered (without an await) to a bounded queue, and one task decides each queued request by the
/// candidate and counts the pair (action, live reason, shadow reason). The answer is never delayed or changed; a full
/// queue drops and counts. A sample of the disagreements is kept for the operator (`GET /v1/operator/shadow`).
public final class ShadowEvaluator: Sendable {
    /// One count's key: the action (as the candidate declares it, so an action a change adds is counted by name; `other`
    /// for an action the candidate does not declare, so a caller cannot grow the table) and the live and shadow reasons.
    public struct Pair: Sendable, Hashable {
        /// The action, or `other` for one the candidate does not declare.
        public var action: String
        /// The live policy's reason.
        public var live: Reason
        /// The candidate's reason.
        public var shadow: Reason
    }

    /// A disagreement kept as an example: the request as decided and both reasons.
    public struct Sample: Sendable {
        /// The request as it was decided.
        public var request: Request
        /// The live policy's reason.
        public var live: Reason
        /// The candidate's reason.
        public var shadow: Reason
    }

    /// The candidate's state: compiled (its hash) or refused (its diagnostics, the last good candidate kept if any).
    public struct Candidate: Sendable {
        /// The compiled candidate, nil until one compiles.
        public var policy: CompiledPolicy?
        /// The diagnostics of the last refused load (empty when the last load compiled).
        public var refused: [String]
        /// When the candidate in `policy` was loaded.
        public var loadedAt: Date?
    }

    private struct Pending {
        var request: Request
        var live: Decision
        var tokenRejected: Bool
    }

    private struct State {
        var candidate = Candidate(policy: nil, refused: [], loadedAt: nil)
        var queue: [Pending] = []
        var draining: Task<Void, Never>?
        var counts: [Pair: Int] = [:]
        var samples: [Sample] = []
        var dropped = 0
    }

    /// The folder the candidate is compiled from.
    public let directory: String
    /// Requests held for the candidate; past it they are dropped and counted.
    public let queueCapacity: Int
    /// Disagreements kept as examples (the newest).
    public static let maxSamples = 50
    /// Requests decided per pass of the draining task, at most.
    static let batchSize = 1_024
    /// How long the draining task waits, once a request is queued and fewer than `batchSize` are, for others to join its
    /// batch. Without it the task started (and woke a thread) for every request or two: a shadow cost decide about
    /// 35,000 instructions a request, now 12,000 (callgrind, docs/performance.md "Shadow evaluation"). Counts and
    /// samples are at most this late; answers never wait for it.
    public let linger: Duration
    private let state = Mutex(State())

    /// An evaluator of the set in `directory`, compiled now (a set that does not compile is reported, not served).
    public init(directory: String, queueCapacity: Int = 65_536, linger: Duration = .milliseconds(10)) {
        self.directory = directory
        self.queueCapacity = max(1, queueCapacity)
        self.linger = max(.zero, linger)
        reload()
    }

    /// Compiles the candidate again; a set that does not compile keeps the last good one and is reported.
    @discardableResult
    public func reload() -> [Diagnostic] {
        let result = PolicyCompiler.load(directory: directory)
        let errors = result.diagnostics.filter { $0.severity == .error }
        let renderer = DiagnosticRenderer(sources: result.sources)
        state.withLock { s in
            if let policy = result.policy {
                s.candidate = Candidate(policy: policy, refused: [], loadedAt: Date())
            } else {
                s.candidate.refused = errors.map { renderer.text($0) }
            }
        }
        return result.diagnostics
    }

    /// The candidate now.
    public var candidate: Candidate { state.withLock { $0.candidate } }

    /// Every (action, live, shadow) count since start; agreements included.
    public var counts: [Pair: Int] { state.withLock { $0.counts } }

    /// The newest disagreements.
    public var samples: [Sample] { state.withLock { $0.samples } }

    /// Requests dropped because the queue was full.
    public var dropped: Int { state.withLock { $0.dropped } }

    /// Offers a decision just made to the candidate, never waiting.
    func offer(_ request: Request, live: Decision, tokenRejected: Bool) {
        state.withLock { s in
            guard s.candidate.policy != nil else { return }
            guard s.queue.count < queueCapacity else {
                s.dropped += 1
                return
            }
            s.queue.append(Pending(request: request, live: live, tokenRejected: tokenRejected))
            if s.draining == nil { s.draining = Task { [self] in await drain() } }
        }
    }

    /// Decides queued requests by the candidate, a batch at a time, until the queue is empty; then ends (the next offer
    /// starts another task). A batch's counts and newest disagreements are gathered outside the lock and merged once.
    private func drain() async {
        while true {
            if linger > .zero, state.withLock({ $0.queue.count < Self.batchSize && $0.candidate.policy != nil }) {
                try? await Task.sleep(for: linger)
            }
            let taken: (batch: [Pending], policy: CompiledPolicy)? = state.withLock { s in
                guard !s.queue.isEmpty, let policy = s.candidate.policy else {
                    s.draining = nil
                    s.queue = []
                    return nil
                }
                return (s.queue.takeBatch(upTo: Self.batchSize), policy)
            }
            guard let (batch, policy) = taken else { return }
            var counts: [Pair: Int] = [:]
            var disagreements: [(index: Int, shadow: Reason)] = []
            for (index, p) in batch.enumerated() {
                let shadow =
                    p.tokenRejected
                    ? policy.signedOutDecision(resourceType: p.request.resource.type, action: p.request.action) : policy.decide(p.request)
                let action = policy.resourceTypes[p.request.resource.type]?.actions[p.request.action] != nil ? p.request.action : "other"
                counts[Pair(action: action, live: p.live.reason, shadow: shadow.reason), default: 0] += 1
                if shadow.reason != p.live.reason { disagreements.append((index, shadow.reason)) }
            }
            let samples = disagreements.suffix(Self.maxSamples).map { Sample(request: batch[$0.index].request, live: batch[$0.index].live.reason, shadow: $0.shadow) }
            state.withLock { s in
                s.counts.merge(counts, uniquingKeysWith: +)
                s.samples.append(contentsOf: samples)
                if s.samples.count > Self.maxSamples { s.samples.removeFirst(s.samples.count - Self.maxSamples) }
            }
        }
    }

    /// Waits until every request offered so far is decided by the candidate.
    public func flush() async {
        while let task = state.withLock({ $0.draining }) { await task.value }
    }
}
