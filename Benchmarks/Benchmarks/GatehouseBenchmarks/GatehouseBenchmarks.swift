// ordo-one/benchmark suite: `swift package --disable-sandbox benchmark` from Benchmarks/.
//
// Each decide/explain benchmark runs one pass over a fixed request mix per `scaledIterations` step,
// so wall clock is per pass and the per-decision figure is the pass time over the mix size
// (the mix size is in the benchmark name). Throughput is passes per second, mallocs are per pass.
import Benchmark
import BenchFixtures
import Foundation
import Gatehouse
import PolicySynth

let benchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal, .instructions]
    Benchmark.defaultConfiguration = .init(metrics: metrics, warmupIterations: 100, maxDuration: .seconds(3), maxIterations: 1_000_000)

    for set in Fixtures.shippedSetNames {
        let policy = Fixtures.compiled(set)
        let requests = Fixtures.requests(for: set)
        let allows = Fixtures.allowRequests(for: set, policy: policy)
        let files = Fixtures.files(of: set)

        Benchmark("decide \(set) mix/\(requests.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for request in requests { blackHole(policy.decide(request)) }
            }
        }
        Benchmark("decide \(set) allow-only/\(allows.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for request in allows { blackHole(policy.decide(request)) }
            }
        }
        Benchmark("explain \(set) mix/\(requests.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for request in requests { blackHole(policy.explain(request)) }
            }
        }
        Benchmark("compile \(set)", configuration: .init(warmupIterations: 3, maxDuration: .seconds(3))) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(PolicyCompiler.compile(name: set, files: files))
            }
        }
    }

    let maxRules = Int(ProcessInfo.processInfo.environment["GATEHOUSE_BENCH_MAX_RULES"] ?? "") ?? 10_000
    for n in [10, 1_000, 10_000, 100_000] where n <= maxRules {
        let set = SyntheticPolicySet(ruleCount: n)
        let policy = Fixtures.compiled(set)
        let requests = set.requests()
        Benchmark("scaling decide \(n) rules mix/\(requests.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for request in requests { blackHole(policy.decide(request)) }
            }
        }
        Benchmark(
            "scaling compile \(n) rules",
            configuration: .init(
                metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident], warmupIterations: n >= 10_000 ? 0 : 2,
                maxDuration: .seconds(5), maxIterations: n >= 10_000 ? 3 : 1_000)
        ) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(PolicyCompiler.compile(name: "synthetic-\(n)", files: set.files))
            }
        }
    }
}
