extension Array {
    /// Removes and returns the first `size` elements (all of them when there are no more), for the draining tasks of
    /// `DecisionRecorder` and `ShadowEvaluator`. Taking the whole array hands its storage over without a copy, and the
    /// array starts again as large as the batch was, so a busy queue does not grow it again.
    mutating func takeBatch(upTo size: Int) -> [Element] {
        guard count > size else {
            let taken = self
            self = []
            reserveCapacity(taken.count)
            return taken
        }
        let taken = Array(prefix(size))
        removeFirst(size)
        return taken
    }
}
