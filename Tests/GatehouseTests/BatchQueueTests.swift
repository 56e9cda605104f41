import Testing

@testable import Gatehouse

/// `takeBatch(upTo:)`, the recorder's and the shadow's way of taking a batch off their queues: in order, at most the
/// size, nothing lost between takes.
@Suite struct BatchQueueTests {
    @Test func batchesComeInOrderAndLoseNothing() {
        var queue = Array(0..<2_500)
        var taken: [[Int]] = []
        while !queue.isEmpty { taken.append(queue.takeBatch(upTo: 1_024)) }
        #expect(taken.map(\.count) == [1_024, 1_024, 452])
        #expect(taken.flatMap { $0 } == Array(0..<2_500))
        queue.append(7)
        #expect(queue.takeBatch(upTo: 1) == [7])
        #expect(queue.takeBatch(upTo: 5).isEmpty)
    }
}
