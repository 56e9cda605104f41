import Dispatch
import Testing

/// For tests that compute for seconds without suspending (differential and property tests over hundreds of thousands
/// of requests): their bodies run on dispatch threads of their own (a task executor preference), not on the
/// cooperative pool.
///
/// The cooperative pool has one thread per processor. On two cores, two such tests held both threads for their whole
/// length, and nothing else in the process ran meanwhile: the in-process servers of other tests answered nobody, and
/// their deadlines and the clients' timeouts passed. On threads of their own they take their share of the processors
/// from the operating system's scheduler like any thread, and the pool keeps serving.
public struct ComputeBound: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(ComputeExecutor.shared) { try await function() }
    }
}

extension Trait where Self == ComputeBound {
    /// The test computes for long without suspending: it runs off the cooperative pool (`ComputeBound`).
    public static var computeBound: Self { ComputeBound() }
}

/// Runs jobs on a dispatch queue of its own: threads apart from the cooperative pool's. Concurrent for the
/// compute-bound suites (`shared`); serial (`oneThread`) where a test needs jobs to run one at a time in order.
public final class ComputeExecutor: TaskExecutor {
    public static let shared = ComputeExecutor(label: "gatehouse.tests.compute-bound", concurrent: true)
    private let queue: DispatchQueue

    public init(label: String, concurrent: Bool) {
        queue = DispatchQueue(label: label, attributes: concurrent ? .concurrent : [])
    }

    /// An executor of one thread: its jobs run one at a time, in the order they came.
    public static func oneThread(_ label: String) -> ComputeExecutor { ComputeExecutor(label: label, concurrent: false) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
