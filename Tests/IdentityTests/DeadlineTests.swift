import Foundation
import Synchronization
import Testing

@testable import Identity

/// `withinDeadline`: the body's value when it finishes in time; nil at the deadline, with the body cancelled.
@Suite struct DeadlineTests {
    @Test func aBodyThatFinishesInTimeGivesItsValue() async {
        for i in 0..<200 {
            #expect(await withinDeadline(.seconds(3600)) { i } == i)
        }
    }

    @Test func aBodyPastTheDeadlineGivesNilAndIsCancelled() async throws {
        let sawCancellation = Mutex(false)
        let result = await withinDeadline(.milliseconds(20)) { () -> Int in
            // Waits until cancelled (bounded: 30 s, far past the 20 ms deadline).
            for _ in 0..<3000 where !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            sawCancellation.withLock { $0 = Task.isCancelled }
            return 1
        }
        #expect(result == nil)
        for _ in 0..<500 where !sawCancellation.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sawCancellation.withLock { $0 }, "the body was not cancelled at the deadline")
    }
}
