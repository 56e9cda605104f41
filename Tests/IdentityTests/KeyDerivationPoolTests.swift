import Dispatch
import Foundation
import GatehouseTestSupport
import Synchronization
import Testing

@testable import Identity

/// A PIN's key derivation never holds the thread of the task that asks for it (issue 35).
///
/// Run on the asking task's thread, a derivation (a quarter of a second of CPU that never suspends) held a thread of
/// the cooperative pool, which has one per processor: as many PIN checks at once as there are processors held every
/// thread, no other task of the process ran, so a server read no request and fired no timer meanwhile, and its
/// deadlines passed for requests it had never looked at.
///
/// The test gives the asking task an executor of one thread of its own (so nothing else in the test run queues on
/// it): a second task on that executor runs while the derivation is still going only if the derivation left the
/// thread. The order of events says so, whatever the machine's speed or load: the derivation takes about a second
/// of CPU, the second task a few instructions.
@Suite struct KeyDerivationPoolTests {
    @Test func anotherTaskRunsOnTheAskingThreadWhileTheDerivationGoesOn() async throws {
        let executor = ComputeExecutor.oneThread("gatehouse.tests.key-derivation")
        let events = EventLog()
        let derivation = Task(executorPreference: executor) {
            _ = await PINHasher.derive("2468", salt: Data(repeating: 7, count: 16), rounds: 1_500_000)
            events.append("derived")
        }
        // Enqueued after the derivation's task: on one thread it runs once that task suspends or ends.
        let other = Task(executorPreference: executor) { events.append("ran") }
        await derivation.value
        await other.value
        #expect(events.all == ["ran", "derived"], "the derivation held the asking task's thread to its end")
    }
}

/// What happened, in order, from any task.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}
