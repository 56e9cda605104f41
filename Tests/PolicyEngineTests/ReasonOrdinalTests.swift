import PolicyModel
import Testing

@testable import PolicyEngine

/// `ActionEntry.denyDecision(_:)` and `ServerMetrics` index by `Reason.ordinal`: it must be each case's
/// position in `allCases`, so every reason has its own index below the array's size.
@Suite struct ReasonOrdinalTests {
    @Test func ordinalIsThePositionInAllCases() {
        for (position, reason) in Reason.allCases.enumerated() {
            #expect(reason.ordinal == position, "\(reason)")
        }
    }
}
