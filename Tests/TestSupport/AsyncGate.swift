/// A counting semaphore for async code.
public actor AsyncGate {
    private let limit: Int
    private var taken = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(limit: Int) { self.limit = limit }

    public func acquire() async {
        if taken < limit {
            taken += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    public func release() {
        if waiting.isEmpty {
            taken -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// The one gate every PostgreSQL test of the run passes, whichever test target it is in (they share one process):
/// at most 12 hold databases or schemas at once, so a whole parallel run stays below the server's `max_connections`
/// of 100 and a loaded 2-core machine does not push pool waits past their deadlines (the identity harness's
/// schemas and the server tests' two-replica databases alike).
public enum PostgresTestGate {
    public static let shared = AsyncGate(limit: 12)
}
