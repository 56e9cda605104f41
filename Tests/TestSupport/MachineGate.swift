import Foundation
import Testing

/// The gate every test that starts a server, a cluster of replicas or a child process passes, whichever test target
/// it is in (they share one process): at most `MachineGate.permits` of them run at once, so a whole parallel run on a
/// slow or busy machine does not start two hundred servers on two cores and push every one of them past its
/// deadlines. Cheap pure tests do not take it and stay parallel.
///
/// Put it on a suite (`@Suite(.startsServers)`, recursive) or on one test; a test inside a gated suite that names it
/// again passes the gate once.
public struct MachineGate: SuiteTrait, TestTrait, TestScoping {
    /// How many gated tests run at once: twice the processors this process may run on, at least 2.
    ///
    /// Twice, because a gated test spends much of its time waiting on its server or child, not computing; counted
    /// from the affinity mask, so `taskset -c 0 swift test` runs two at once as a one-core machine would.
    public static let permits: Int = {
        if let given = ProcessInfo.processInfo.environment["GATEHOUSE_TEST_MACHINE_PERMITS"].flatMap(Int.init), given > 0 {
            return given
        }
        return max(2, 2 * usableProcessors)
    }()

    /// The processors this process may run on (its affinity mask), as `nproc` counts them.
    public static var usableProcessors: Int {
        // Linux: the `Cpus_allowed` mask of /proc/self/status (what sched_getaffinity returns), in hex words.
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") })
        {
            let count = line.dropFirst("Cpus_allowed:".count).filter(\.isHexDigit).reduce(0) { $0 + ($1.hexDigitValue ?? 0).nonzeroBitCount }
            if count > 0 { return count }
        }
        return ProcessInfo.processInfo.activeProcessorCount
    }

    static let shared = AsyncGate(limit: permits)

    /// Whether the current task already holds a permit (a gated test inside a gated suite).
    @TaskLocal static var holding = false

    public var isRecursive: Bool { true }

    /// Each test case is gated on its own; a suite as a whole is not (its tests are).
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        if Self.holding {
            try await function()
            return
        }
        await Self.shared.acquire()
        do {
            try await Self.$holding.withValue(true) { try await function() }
        } catch {
            await Self.shared.release()
            throw error
        }
        await Self.shared.release()
    }
}

extension Trait where Self == MachineGate {
    /// The test starts servers, replicas, clusters or child processes: it passes the machine's gate (`MachineGate`).
    public static var startsServers: Self { MachineGate() }
}
