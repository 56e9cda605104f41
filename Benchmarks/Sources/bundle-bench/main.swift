// `swift run -c release bundle-bench`: signed policy bundles (docs/bundles.md) — build, verify and compile-from-bundle
// time per shipped set and for the 10,000-rule synthetic set, each as a ratio to compiling the folder directly
// (`PolicyCompiler.load(directory:)`, what `policy serve` does at a reload). Medians of wall-clock runs; not a test.
import BenchFixtures
import Foundation
import GatehouseEngine
import PolicySynth

@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

func medianMilliseconds(runs: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var samples: [Double] = []
    body()  // warm-up
    for _ in 0..<runs {
        let d = clock.measure(body)
        samples.append(Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15)
    }
    return samples.sorted()[samples.count / 2]
}

func fmt(_ x: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", x) }

let key = BundleSigningKey()
let created = Date(timeIntervalSince1970: 1_790_000_000)
var sets: [(name: String, directory: String, runs: Int)] = Fixtures.shippedSetNames.map { ($0, Fixtures.policiesDirectory + "/" + $0, 30) }
let synthetic = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-bench-\(UUID().uuidString)/synthetic-10000").path
try SyntheticPolicySet(ruleCount: 10_000).write(to: synthetic)
defer { try? FileManager.default.removeItem(atPath: (synthetic as NSString).deletingLastPathComponent) }
sets.append(("synthetic 10,000 rules", synthetic, 5))

print("| set | bundle bytes | compile folder ms | build ms (×) | verify ms (×) | compile bundle ms (×) | verify+compile (×) |")
print("|---|---|---|---|---|---|---|")
for set in sets {
    let folder = medianMilliseconds(runs: set.runs) { consume(PolicyCompiler.load(directory: set.directory, relativePaths: true)) }
    let bundle = try PolicyBundle.build(directory: set.directory, key: key, createdAt: created, revision: 1)
    let build = medianMilliseconds(runs: set.runs) { consume(try? PolicyBundle.build(directory: set.directory, key: key, createdAt: created, revision: 1)) }
    let verify = medianMilliseconds(runs: set.runs) { consume(try? PolicyBundle.verify(bundle.bytes, trusting: [key.publicKey])) }
    let compile = medianMilliseconds(runs: set.runs) { consume(bundle.compile()) }
    print(
        "| \(set.name) | \(bundle.bytes.count) | \(fmt(folder)) | \(fmt(build)) (\(fmt(build / folder))) | \(fmt(verify)) (\(fmt(verify / folder)))"
            + " | \(fmt(compile)) (\(fmt(compile / folder))) | \(fmt((verify + compile) / folder)) |")
}
