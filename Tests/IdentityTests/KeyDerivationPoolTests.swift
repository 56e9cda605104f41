import Foundation
import Synchronization
import Testing

@testable import Identity

/// A PIN's key derivation never holds a thread of the cooperative pool (issue 35).
///
/// The pool has one thread per processor. When derivations ran on it, as many PIN checks at once as there are
/// processors held every thread for their whole length: no other task of the process ran, so a server read no request
/// and fired no timer meanwhile, and its deadlines passed for requests it had never looked at.
@Suite struct KeyDerivationPoolTests {
    @Test func otherTasksRunWhileEveryCooperativeThreadCouldBeDeriving() async throws {
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        // About a second of CPU each: long beside the few milliseconds the other task needs to be scheduled.
        let rounds = 1_500_000
        let events = EventLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<width {
                group.addTask {
                    _ = await PINHasher.derive("2468", salt: Data(repeating: UInt8(index), count: 16), rounds: rounds)
                    events.append("derived")
                }
            }
            group.addTask {
                // Starts once the derivations have been handed out, as a request arriving meanwhile would.
                await Task.yield()
                try await Task.sleep(for: .milliseconds(5))
                events.append("ticked")
            }
            try await group.waitForAll()
        }
        let order = events.all
        #expect(order.count == width + 1)
        #expect(order.first == "ticked", "a task waiting for a cooperative thread ran only after a derivation ended: \(order)")
    }
}

/// What happened, in order, from any task.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}
