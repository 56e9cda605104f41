import Foundation
import Identity
import PolicyEngine
import PolicyModel
import Synchronization
import Tracing

/// Which decisions `GatehouseService` records in the decision log.
public enum DecisionLogMode: Sendable, Hashable, CustomStringConvertible {
    /// No decision is recorded.
    case off
    /// Only denials are recorded (what an operator investigates).
    case denied
    /// Every decision is recorded, allowed ones too.
    case all
    /// A fraction of every decision (0 < rate <= 1), chosen at random per decision: traffic to replay at a known share.
    case sample(Double)

    /// The spellings `init?(_:)` takes, for an error message.
    public static let spellings = "off, denied, all, sample:R (a fraction, 0 < R <= 1)"

    /// Reads `off`, `denied`, `all` or `sample:R`; nil for anything else (a rate outside (0, 1] included).
    public init?(_ text: String) {
        switch text {
        case "off": self = .off
        case "denied": self = .denied
        case "all": self = .all
        default:
            guard text.hasPrefix("sample:"), let rate = Double(text.dropFirst("sample:".count)), rate > 0, rate <= 1 else { return nil }
            self = rate == 1 ? .all : .sample(rate)
        }
    }

    /// The spelling `init?(_:)` reads back.
    public var description: String {
        switch self {
        case .off: "off"
        case .denied: "denied"
        case .all: "all"
        case .sample(let rate): "sample:\(rate)"
        }
    }
}

/// How `GatehouseService` records decisions: which ones, how much it holds in memory, and what bounds an untrusted
/// caller's share of the log (issue 36's N6).
public struct DecisionRecording: Sendable {
    /// Which decisions are recorded.
    public var mode: DecisionLogMode
    /// Also record decisions made for no live session (no bearer, or a refused one, and no subject id). Off by default:
    /// anyone can make those, and each would be a row.
    public var signedOut: Bool
    /// Records held in memory waiting for the store; past it a record is dropped and counted, never waited for.
    public var queueCapacity: Int
    /// Records written per store transaction, at most.
    public var batchSize: Int
    /// How long the writer waits, once a record is queued and fewer than `batchSize` are, for others to join its batch.
    /// A transaction costs the store a commit and each batch a look-up of its users, so one transaction per record (the
    /// writer starting as soon as the first is queued) cost recording more than the records themselves. Records wait
    /// this long at most before they are written; decisions never wait for it.
    public var linger: Duration
    /// Records one request (a batch of 10,000 items) may add, at most; the rest are counted, not written.
    public var maxPerRequest: Int
    /// Identical signed-out records of one client within this many seconds are written once (the rest counted).
    public var coalesceWindow: TimeInterval
    /// The write quota a record must pass, given the client key and the subject's user id (nil signed out): false drops
    /// the record (counted). Nil: no quota (in-process use). The server passes its write-quota buckets.
    public var admit: (@Sendable (_ client: String?, _ userId: String?) -> Bool)?

    /// Recording as `mode` says, with the bounds' defaults.
    public init(
        mode: DecisionLogMode = .off, signedOut: Bool = false, queueCapacity: Int = 65_536, batchSize: Int = 512, linger: Duration = .milliseconds(10),
        maxPerRequest: Int = 100, coalesceWindow: TimeInterval = 60, admit: (@Sendable (_ client: String?, _ userId: String?) -> Bool)? = nil
    ) {
        self.mode = mode
        self.signedOut = signedOut
        self.queueCapacity = max(1, queueCapacity)
        self.batchSize = max(1, batchSize)
        self.linger = max(.zero, linger)
        self.maxPerRequest = max(0, maxPerRequest)
        self.coalesceWindow = coalesceWindow
        self.admit = admit
    }
}

/// Where a request came from, for the decision log's bounds: the client key (the per-client limits' key) and how many
/// records the request may still add. One per request, made by the server.
public final class DecisionOrigin: Sendable {
    /// The client key (an address, or a /64 for IPv6) the per-client quotas and coalescing go by.
    public let client: String
    private let remaining: Atomic<Int>

    /// An origin for a request from `client` that may add up to `maxRecords` records.
    public init(client: String, maxRecords: Int) {
        self.client = client
        self.remaining = Atomic(maxRecords)
    }

    /// Takes one record from the request's allowance: false when none is left.
    func takeRecord() -> Bool {
        remaining.subtract(1, ordering: .relaxed).newValue >= 0
    }
}

/// The decision log's queue: records are offered on the answer's path without waiting (`offer`), held in a bounded
/// buffer, and written by one draining task in batches, one store transaction per batch. A full buffer drops the
/// record and counts it; a store that fails or stalls never delays or fails a decision, it only fills the buffer.
///
/// The draining task exists only while records wait: the first record offered to an empty queue starts it and it ends
/// when the queue is empty, so an idle recorder holds no task. `flush()` waits until everything offered so far is
/// written (or dropped); `close()` also refuses what comes after (a clean shutdown).
public final class DecisionRecorder: Sendable {
    /// What the recorder did with the records offered to it since start.
    public struct Counts: Sendable, Hashable {
        /// Written to the store.
        public var written = 0
        /// Dropped because the queue was full (the store is behind or stalled).
        public var droppedQueueFull = 0
        /// Dropped because the store refused their batch.
        public var droppedStoreFailed = 0
        /// Dropped past the write quota of their client or account.
        public var droppedQuota = 0
        /// Dropped past their request's allowance (`maxPerRequest`).
        public var droppedRequestCap = 0
        /// Dropped because the recorder was closed (offered during shutdown).
        public var droppedClosed = 0
        /// Signed-out records not written because an identical one of the same client was, within the window.
        public var coalesced = 0

        /// Every record dropped, whatever the reason.
        public var dropped: Int { droppedQueueFull + droppedStoreFailed + droppedQuota + droppedRequestCap + droppedClosed }

        /// The dropped counts by reason, as the server's metric labels them.
        public var droppedByReason: [String: Int] {
            ["queue_full": droppedQueueFull, "store_failed": droppedStoreFailed, "quota": droppedQuota, "request_cap": droppedRequestCap, "closed": droppedClosed]
        }
    }

    private struct State {
        var queue: [DecisionRecordDraft] = []
        var draining: Task<Void, Never>?
        var closed = false
        var counts = Counts()
        /// The coalescing window the keys below belong to, and the keys of signed-out records written in it.
        var window: Int64 = .min
        var seen: Set<Int> = []
        /// The text of each deciding rule's location, made once: formatting `file:line:column` for every record was
        /// about 1,100 instructions on the answer's path (callgrind), and a policy has few rules.
        var locations: [SourceLocation: String] = [:]

        /// `location` as `file:line:column`, remembered.
        mutating func text(of location: SourceLocation) -> String {
            if let known = locations[location] { return known }
            if locations.count >= DecisionRecorder.maxLocations { locations.removeAll(keepingCapacity: true) }
            let made = location.description
            locations[location] = made
            return made
        }
    }

    /// How many rule locations `State.locations` keeps before it starts again (policies have far fewer rules).
    private static let maxLocations = 4096

    /// The settings recording follows.
    public let settings: DecisionRecording
    /// Which decisions are recorded (`settings.mode`, kept apart for the answer's path).
    public let mode: DecisionLogMode
    private let identity: IdentityService
    private let state = Mutex(State())
    /// A splitmix64 state for `sample:R`: cheap, shared, and good enough to choose a share of traffic.
    private let sampleState = Atomic<UInt64>(UInt64(truncatingIfNeeded: Int64(Date().timeIntervalSince1970 * 1e6)))
    /// How many coalescing keys a window keeps before it starts again (a flood of distinct requests is bounded by the
    /// quota instead).
    private static let maxCoalescingKeys = 100_000

    /// A recorder writing through `identity` as `settings` says.
    public init(identity: IdentityService, settings: DecisionRecording) {
        self.identity = identity
        self.settings = settings
        self.mode = settings.mode
    }

    /// The counts since start.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Records waiting for the store now.
    public var pending: Int { state.withLock { $0.queue.count } }

    /// Whether `decision` is one the mode records (before the signed-out rule and the bounds).
    @inline(__always)
    func wants(_ decision: Decision) -> Bool {
        switch mode {
        case .off: return false
        case .all: return true
        case .denied: return !decision.isAllowed
        case .sample(let rate): return nextUnit() < rate
        }
    }

    /// A uniform value in [0, 1) from the shared splitmix64 sequence.
    private func nextUnit() -> Double {
        var z = sampleState.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(UInt64(1) << 53)
    }

    /// Offers one decision of `request` (as decided) to the log, never waiting: checked against the signed-out rule,
    /// the request's allowance, coalescing and the quota, then queued (or dropped when the queue is full).
    func offer(_ decision: Decision, of request: Request, fromSession: Bool, by policy: CompiledPolicy, origin: DecisionOrigin?) {
        let userId = request.subject.id.flatMap { $0.isEmpty ? nil : $0 }
        let signedOut = !fromSession && userId == nil
        if signedOut && !settings.signedOut { return }
        if let origin, !origin.takeRecord() {
            state.withLock { $0.counts.droppedRequestCap += 1 }
            return
        }
        var key: Int?
        if signedOut {
            var hasher = Hasher()
            hasher.combine(origin?.client)
            hasher.combine(request.action)
            hasher.combine(request.resource)
            hasher.combine(request.context.attributes)
            hasher.combine(decision.effect)
            hasher.combine(decision.reason)
            hasher.combine(policy.contentHash)
            key = hasher.finalize()
        }
        let window = Int64(((request.context.now ?? Date()).timeIntervalSince1970 / max(1, settings.coalesceWindow)).rounded(.down))
        if let key {
            let fresh = state.withLock { s -> Bool in
                if s.window != window {
                    s.window = window
                    s.seen.removeAll(keepingCapacity: true)
                }
                if s.seen.count >= Self.maxCoalescingKeys { s.seen.removeAll(keepingCapacity: true) }
                if s.seen.insert(key).inserted { return true }
                s.counts.coalesced += 1
                return false
            }
            if !fresh { return }
        }
        if let admit = settings.admit, !admit(origin?.client, userId) {
            state.withLock { $0.counts.droppedQuota += 1 }
            return
        }
        state.withLock { s in
            if s.closed {
                s.counts.droppedClosed += 1
                return
            }
            guard s.queue.count < settings.queueCapacity else {
                s.counts.droppedQueueFull += 1
                return
            }
            let location = decision.policy.map { s.text(of: $0) }
            // Made where it is stored: a draft built outside the lock was copied into the queue and then destroyed,
            // about 1,700 instructions a record (callgrind).
            s.queue.append(DecisionRecordDraft(
                request: request, effect: decision.effect.rawValue, reason: decision.reason.rawValue, policyHash: policy.contentHash,
                policyLocation: location, fromSession: fromSession))
            if s.draining == nil {
                s.draining = Task { [self] in await drain() }
            }
        }
    }

    /// Writes batches until the queue is empty, then ends (the next offer starts another task).
    private func drain() async {
        let size = settings.batchSize
        while true {
            if settings.linger > .zero, state.withLock({ $0.queue.count < size && !$0.closed }) {
                try? await Task.sleep(for: settings.linger)
            }
            let batch: [DecisionRecordDraft]? = state.withLock { s in
                guard !s.queue.isEmpty else {
                    s.draining = nil
                    return nil
                }
                return s.queue.takeBatch(upTo: size)
            }
            guard let batch else { return }
            do {
                if DecisionTracing.isEnabled {
                    // A trace of its own: the batch serves many requests, and the task that drains was started by one.
                    // Sampled on its own, whatever the request that started the drain was.
                    try await DecisionTracing.$recording.withValue(true) {
                        try await withSpan(DecisionTracing.Name.recordWrite, context: .topLevel) { span in
                            span.attributes["gatehouse.decision_log.records"] = batch.count
                            guard span.isRecording else {
                                return try await DecisionTracing.$recording.withValue(false) { try await identity.writeDecisionRecords(batch) }
                            }
                            try await identity.writeDecisionRecords(batch)
                        }
                    }
                } else {
                    try await identity.writeDecisionRecords(batch)
                }
                state.withLock { $0.counts.written += batch.count }
            } catch {
                state.withLock { $0.counts.droppedStoreFailed += batch.count }
            }
        }
    }

    /// Waits until every record offered before the call is written or dropped.
    public func flush() async {
        while let task = state.withLock({ $0.draining }) {
            await task.value
        }
    }

    /// Refuses further records (counted as dropped) and waits until the queued ones are written: a clean shutdown.
    public func close() async {
        state.withLock { $0.closed = true }
        await flush()
    }
}
