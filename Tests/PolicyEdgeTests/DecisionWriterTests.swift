import Foundation
import GatehouseTestSupport
import PolicyCompiler
import PolicyEdge
import PolicyEngine
import PolicyModel
import PolicyVerification
import Testing

/// Shipped policy sets, compiled once, with the requests their own tests ask.
enum Shipped {
    static let root = Repository.root

    static let sets: [(policy: CompiledPolicy, requests: [Request])] = PolicyCompiler.policySets(under: root.appendingPathComponent("policies").path)
        .map { PolicyCompiler.load(directory: $0) }
        .map { load in (load.policy!, PolicyTestRunner.run(load).compactMap(\.request)) }

    static var researchCrawler: CompiledPolicy { sets.first { $0.policy.name == "research-crawler" }!.policy }
}

/// The byte writer against today's renderer (`Decision.json.rendered()`): the same bytes for every decision.
@Suite(.computeBound) struct DecisionWriterTests {
    @Test func writesTodaysBytesForEveryShippedTestRequest() {
        var count = 0
        for (policy, requests) in Shipped.sets {
            for request in requests {
                let decision = policy.decide(request)
                #expect(String(decoding: decision.jsonBytes, as: UTF8.self) == decision.json.rendered())
                count += 1
            }
        }
        #expect(count > 50)
    }

    @Test func writesTodaysBytesForGeneratedDecisions() {
        var random = SeededRandom(seed: 0xDEC1_5102)
        let texts = ["", "plain", "quote \" and backslash \\", "line\nbreak\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}", "Zoë 日本 😀", "a/b", "{\"json\":1}"]
        let numbers = [0, 1, 9, 10, 49, 50, -1, -10, 1_000_000, Int.max, Int.min, Int.min + 1]
        var out: [UInt8] = []
        for _ in 0..<5000 {
            func maybe<T>(_ items: [T]) -> T? { random.chance(50) ? random.pick(items) : nil }
            let decision = Decision(
                effect: random.pick(Effect.allCases), reason: random.pick(Reason.allCases), message: maybe(texts), limit: maybe(numbers),
                used: maybe(numbers), remaining: maybe(numbers), upgradeTo: maybe(texts),
                policy: random.chance(50) ? SourceLocation(file: random.pick(texts), line: random.pick(numbers), column: random.pick(numbers)) : nil)
            out.removeAll(keepingCapacity: true)
            DecisionWriter.append(decision, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == decision.json.rendered(), "\(decision)")
        }
    }

    @Test func integersAsStringWritesThem() {
        for value in [0, 7, 10, 99, 100, 12345, -5, Int.max, Int.min] {
            var out: [UInt8] = []
            DecisionWriter.appendInteger(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value))
        }
    }
}
