import Foundation

/// How much the generated tests do, and from which seed.
///
/// By default the counts are sized for a debug build on two shared cores and every seed is fixed.
/// `GATEHOUSE_LONG_TESTS=1` multiplies the counts by 10 (any other number N multiplies them by N);
/// `GATEHOUSE_TEST_SEED=N` replaces the base seed, and `GATEHOUSE_TEST_SEED=random` draws one and prints it.
enum TestScale {
    static let factor: Int = {
        guard let text = ProcessInfo.processInfo.environment["GATEHOUSE_LONG_TESTS"], let n = Int(text), n > 0 else { return 1 }
        return n == 1 ? 10 : n
    }()

    static func count(_ base: Int) -> Int { base * factor }

    /// The base seed of a test: its fixed default, or the one chosen by `GATEHOUSE_TEST_SEED`.
    static func seed(_ fixed: UInt64) -> UInt64 {
        switch ProcessInfo.processInfo.environment["GATEHOUSE_TEST_SEED"] {
        case "random"?:
            let seed = UInt64.random(in: 1...UInt64.max)
            print("GATEHOUSE_TEST_SEED=\(seed) (drawn at random; set it to repeat this run)")
            return seed
        case let text?: return UInt64(text) ?? fixed
        case nil: return fixed
        }
    }
}
