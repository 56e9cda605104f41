// A plain timing runner that needs no benchmark plugin: `swift run -c release gatehouse-bench [--max-rules N]`.
//
// Times with ContinuousClock. A sample is one pass over a fixed request mix; the figure per decision is the
// pass's time over its request count, so clock overhead is amortised. Reports median and p99 of the samples
// and throughput; then compile times of the shipped sets, and the scaling table over synthetic sets.
import BenchFixtures
import Foundation
import Gatehouse
import PolicySynth

var maxRules = 10_000
var samples = 2_000
var compileOnly: Int?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--max-rules": maxRules = Int(arguments.popFirst() ?? "") ?? maxRules
    case "--samples": samples = Int(arguments.popFirst() ?? "") ?? samples
    // Compiles one synthetic set of N rules and exits: the target to run under perf or callgrind.
    case "--compile-only": compileOnly = Int(arguments.popFirst() ?? "")
    default:
        print("usage: gatehouse-bench [--max-rules N] [--samples N] [--compile-only N]")
        exit(64)
    }
}

@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

func nanoseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e9 + Double(d.components.attoseconds) / 1e9
}

struct Stats {
    var median: Double
    var p99: Double
    var perSecond: Double
}

/// Runs `body` over `requests` `samples` times (after a warm-up) and returns per-request median and p99 in ns.
func measure(_ requests: [Request], samples: Int, _ body: (Request) -> some Any) -> Stats {
    let clock = ContinuousClock()
    for _ in 0..<max(10, samples / 10) { for r in requests { consume(body(r)) } }
    var perRequest: [Double] = []
    perRequest.reserveCapacity(samples)
    var total = Duration.zero
    for _ in 0..<samples {
        let start = clock.now
        for r in requests { consume(body(r)) }
        let elapsed = clock.now - start
        total += elapsed
        perRequest.append(nanoseconds(elapsed) / Double(requests.count))
    }
    perRequest.sort()
    let p99 = perRequest[min(perRequest.count - 1, Int(Double(perRequest.count) * 0.99))]
    return Stats(
        median: perRequest[perRequest.count / 2], p99: p99,
        perSecond: Double(samples * requests.count) / (nanoseconds(total) / 1e9))
}

/// Median wall time in ms of `runs` calls of `body`.
func medianMilliseconds(runs: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var times: [Double] = []
    for _ in 0..<runs {
        let start = clock.now
        body()
        times.append(nanoseconds(clock.now - start) / 1e6)
    }
    times.sort()
    return times[times.count / 2]
}

if let n = compileOnly {
    let set = SyntheticPolicySet(ruleCount: n)
    let ms = medianMilliseconds(runs: 1) { consume(Fixtures.compiled(set)) }
    print("compiled \(n) rules in \(fmt(ms, 1)) ms")
    exit(0)
}

func fmt(_ x: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", x) }

print("Gatehouse benchmarks (ContinuousClock runner), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(samples) samples per row")
print("")
print("| set | requests | allow/deny | decide median ns | decide p99 ns | decides/s | explain median ns | compile median ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for set in Fixtures.shippedSetNames {
    let policy = Fixtures.compiled(set)
    let requests = Fixtures.requests(for: set)
    let allowed = requests.filter { policy.decide($0).isAllowed }.count
    let decide = measure(requests, samples: samples) { policy.decide($0) }
    let explain = measure(requests, samples: max(100, samples / 10)) { policy.explain($0) }
    let files = Fixtures.files(of: set)
    let compile = medianMilliseconds(runs: 20) { consume(PolicyCompiler.compile(name: set, files: files)) }
    print("| \(set) | \(requests.count) | \(allowed)/\(requests.count - allowed) | \(fmt(decide.median)) | \(fmt(decide.p99)) | \(fmt(decide.perSecond / 1e6, 2))M | \(fmt(explain.median)) | \(fmt(compile, 2)) |")
}

print("")
print("| rules | resource types | files | bytes | compile ms | decide median ns | decide p99 ns | vs 10 rules |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
var baseline: Double?
for n in [10, 1_000, 10_000, 100_000] where n <= maxRules {
    let set = SyntheticPolicySet(ruleCount: n)
    let clock = ContinuousClock()
    var policy: CompiledPolicy?
    let runs = n >= 100_000 ? 1 : (n >= 10_000 ? 3 : 10)
    let compile = medianMilliseconds(runs: runs) { policy = Fixtures.compiled(set) }
    _ = clock
    let requests = set.requests()
    let decide = measure(requests, samples: max(50, samples / 4)) { policy!.decide($0) }
    baseline = baseline ?? decide.median
    print("| \(n) | \(set.typeCount) | \(set.files.count) | \(set.byteCount) | \(fmt(compile, 1)) | \(fmt(decide.median)) | \(fmt(decide.p99)) | \(fmt(decide.median / baseline!, 2))x |")
}
