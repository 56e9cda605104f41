import Foundation
import Hummingbird
import Synchronization

/// The request deadline of every route (`RouteBuilder.on`): the handler's outcome, or nil once `limit` has passed, with
/// the handler's task cancelled and left to end on its own (a wait that ignores cancellation cannot hold the answer).
///
/// As `withinDeadline` (Identity) does, the handler runs in a task of its own and the first of it and the deadline
/// answers; unlike it, the deadline is not a second task asleep per request but an entry in `timers`, which one task
/// sweeps every `tick` while any request is pending. Per request: one task, one small object, a table entry.
func withinRequestDeadline(
    _ limit: Duration, timers: RequestDeadlines,
    _ handler: @escaping @Sendable () async -> Result<Response, any Error>
) async -> Result<Response, any Error>? {
    let race = RequestRace()
    let id = timers.add(race, limit: limit)
    let outcome = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<Response, any Error>?, Never>) in
            race.start(continuation, work: Task { race.finish(await handler()) })
        }
    } onCancel: {
        race.finish(nil)
    }
    timers.remove(id)
    return outcome
}

/// The first of a handler and its deadline to finish.
final class RequestRace: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<Response, any Error>?, Never>?
        var work: Task<Void, Never>?
        var finished: Result<Response, any Error>??
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Result<Response, any Error>?, Never>, work: Task<Void, Never>) {
        let early: Result<Response, any Error>?? = state.withLock { s in
            if let finished = s.finished { return finished }
            s.continuation = continuation
            s.work = work
            return nil
        }
        if let early {
            if case .none = early { work.cancel() }
            continuation.resume(returning: early)
        }
    }

    /// The first call wins: nil (the deadline) cancels the handler's task.
    func finish(_ outcome: Result<Response, any Error>?) {
        let (continuation, work) = state.withLock { s -> (CheckedContinuation<Result<Response, any Error>?, Never>?, Task<Void, Never>?) in
            guard s.finished == nil else { return (nil, nil) }
            s.finished = .some(outcome)
            defer { (s.continuation, s.work) = (nil, nil) }
            return (s.continuation, s.work)
        }
        guard let continuation else { return }
        if outcome == nil { work?.cancel() }
        continuation.resume(returning: outcome)
    }
}

/// The pending requests' deadlines, kept by one task that wakes every `tick` while any is pending and ends when none
/// is (the next `add` starts it again). Adding and removing one is a lock and a table entry.
final class RequestDeadlines: Sendable {
    private struct Pending {
        var due: ContinuousClock.Instant
        var race: RequestRace
    }
    private struct State {
        var pending: [UInt64: Pending] = [:]
        var next: UInt64 = 0
        var sweeping = false
    }
    private let state = Mutex(State())
    /// How late past its deadline a request may be answered at most (besides the machine's own delays).
    let tick: Duration

    init(tick: Duration = .milliseconds(20)) { self.tick = tick }

    /// Watches `race` until `remove`: once `limit` has passed, it is finished with nil. Returns its key.
    func add(_ race: RequestRace, limit: Duration) -> UInt64 {
        let due = ContinuousClock.now + limit
        let (id, startSweeping) = state.withLock { s -> (UInt64, Bool) in
            s.next &+= 1
            s.pending[s.next] = Pending(due: due, race: race)
            if s.sweeping { return (s.next, false) }
            s.sweeping = true
            return (s.next, true)
        }
        if startSweeping { Task.detached { [self] in await sweep() } }
        return id
    }

    func remove(_ id: UInt64) {
        _ = state.withLock { $0.pending.removeValue(forKey: id) }
    }

    /// How many requests are watched now.
    var count: Int { state.withLock { $0.pending.count } }

    private func sweep() async {
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let due: [RequestRace]? = state.withLock { s in
                if s.pending.isEmpty {
                    s.sweeping = false
                    return nil
                }
                var due: [RequestRace] = []
                for (id, entry) in s.pending where entry.due <= now {
                    due.append(entry.race)
                    s.pending[id] = nil
                }
                return due
            }
            guard let due else { return }
            for race in due { race.finish(nil) }
        }
    }
}
