import Dispatch
import Foundation

extension Array where Element: Sendable {
    /// `map` over the elements on every core, results in the elements' order.
    ///
    /// For the request spaces: each (type, action) is enumerated independently, and merging the results in
    /// order keeps every report byte-for-byte what a sequential run prints.
    func concurrentMap<T: Sendable>(_ transform: @Sendable (Element) -> T) -> [T] {
        guard count > 1 else { return map(transform) }
        let results = Results<T>(count: count)
        withoutActuallyEscaping(transform) { transform in
            // `Self` is Sendable here, so the elements can be read from every worker.
            let elements = self
            DispatchQueue.concurrentPerform(iterations: elements.count) { index in
                results.set(index, transform(elements[index]))
            }
        }
        return results.values()
    }
}

/// Slots written once each from concurrent workers, read after they all finished.
private final class Results<T: Sendable>: @unchecked Sendable {
    // @unchecked: every access to `slots` holds `lock`.
    private var slots: [T?]
    private let lock = NSLock()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ value: T) {
        lock.lock()
        slots[index] = value
        lock.unlock()
    }

    func values() -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return slots.map { $0! }
    }
}
