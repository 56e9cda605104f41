import BenchFixtures
import Gatehouse
import HandWrittenBaseline
import Testing

/// The hand-written baselines are only a fair yardstick if they decide what `decide` decides: same effect, same
/// reason and the same limit figures on an allow, for every request of the mix the benchmarks time.
@Suite struct HandWrittenBaselineTests {
    @Test(arguments: ["research-crawler", "mimisupply"])
    func stringKeyedBaselineAgreesWithDecide(set: String) throws {
        let policy = Fixtures.compiled(set)
        let check = try #require(HandWritten.check(for: set))
        let requests = Fixtures.requests(for: set)
        #expect(requests.count > 10)
        for request in requests {
            let decision = policy.decide(request)
            #expect(Self.agree(check(request), decision), "\(request)")
        }
    }

    @Test(arguments: ["research-crawler", "mimisupply"])
    func internedBaselineAgreesWithDecide(set: String) {
        let policy = Fixtures.compiled(set)
        for request in Fixtures.requests(for: set) {
            #expect(Self.agree(HandWritten.decide(HandInternedRequest(request)), policy.decide(request)), "\(request)")
        }
    }

    /// Both mixes hold allows and denies, so agreement is not trivially one-sided.
    @Test(arguments: ["research-crawler", "mimisupply"])
    func mixesHoldBothEffects(set: String) {
        let policy = Fixtures.compiled(set)
        let allowed = Fixtures.requests(for: set).filter { policy.decide($0).isAllowed }.count
        #expect(allowed > 0 && allowed < Fixtures.requests(for: set).count)
    }

    static func agree(_ hand: HandDecision, _ decision: Decision) -> Bool {
        guard hand.isAllowed == decision.isAllowed, hand.reason == decision.reason else { return false }
        guard decision.isAllowed else { return true }
        return hand.limit == decision.limit && hand.used == decision.used && hand.remaining == decision.remaining
    }
}
