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
import Synchronization

let benchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal, .instructions]
    Benchmark.defaultConfiguration = .init(metrics: metrics, warmupIterations: 100, maxDuration: .seconds(3), maxIterations: 1_000_000)

    // The framework's own cost per measured iteration (wall clock and mallocs), to subtract from the rows below.
    Benchmark("baseline empty iteration") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(benchmark) }
    }

    for set in Fixtures.shippedSetNames {
        let policy = Fixtures.compiled(set)
        let requests = Fixtures.requests(for: set)
        let allows = Fixtures.allowRequests(for: set, policy: policy)
        let denies = requests.filter { !policy.decide($0).isAllowed }
        let prepared = requests.map { policy.prepare(resourceType: $0.resource.type, action: $0.action) }
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
        Benchmark("decide \(set) deny-only/\(denies.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for request in denies { blackHole(policy.decide(request)) }
            }
        }
        Benchmark("decide \(set) prepared mix/\(requests.count)") { benchmark in
            for _ in benchmark.scaledIterations {
                for (request, handle) in zip(requests, prepared) {
                    blackHole(handle.map { policy.decide(request, prepared: $0) } ?? policy.decide(request))
                }
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

    // Synthetic sets compile lazily, once per process, only when a scaling benchmark runs: the plugin starts
    // this executable once per benchmark, and 100,000 rules take seconds to compile.
    let environment = ProcessInfo.processInfo.environment
    let maxRules = Int(environment["GATEHOUSE_BENCH_MAX_RULES"] ?? "") ?? 10_000
    let maxCompileRules = Int(environment["GATEHOUSE_BENCH_MAX_COMPILE_RULES"] ?? "") ?? 10_000
    for n in [10, 1_000, 10_000, 100_000] where n <= maxRules {
        Benchmark("scaling decide \(n) rules mix/256") { benchmark in
            let (policy, requests) = SyntheticCache.shared.policy(rules: n)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for request in requests { blackHole(policy.decide(request)) }
            }
        }
        guard n <= maxCompileRules else { continue }
        Benchmark(
            "scaling compile \(n) rules",
            configuration: .init(
                metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident], warmupIterations: n >= 10_000 ? 0 : 2,
                maxDuration: .seconds(5), maxIterations: n >= 10_000 ? 3 : 1_000)
        ) { benchmark in
            let set = SyntheticPolicySet(ruleCount: n)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(PolicyCompiler.compile(name: "synthetic-\(n)", files: set.files))
            }
        }
    }
}

/// Compiled synthetic sets and their request mixes, built on first use.
final class SyntheticCache: Sendable {
    static let shared = SyntheticCache()
    private let entries = Mutex<[Int: (CompiledPolicy, [Request])]>([:])

    func policy(rules n: Int) -> (CompiledPolicy, [Request]) {
        entries.withLock { entries in
            if let entry = entries[n] { return entry }
            let set = SyntheticPolicySet(ruleCount: n)
            let entry = (Fixtures.compiled(set), set.requests())
            entries[n] = entry
            return entry
        }
    }
}
