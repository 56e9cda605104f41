// swift-tools-version: 6.1
// Gatehouse benchmarks: a package of their own so the main build never compiles ordo-one/benchmark.
import PackageDescription

let package = Package(
    name: "GatehouseBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Gatehouse", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // The runner counts allocations per decision and the compiled policy's bytes with the same interposer.
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        // The lists section seeds its world and runs the plain SELECT through the identity store's own pool (GRDB's).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Writes valid synthetic policy sets of N rules of realistic shapes.
        .target(name: "PolicySynth", dependencies: [.product(name: "Gatehouse", package: "Gatehouse")]),
        // The shipped policy sets and the fixed request mixes every benchmark shares.
        .target(name: "BenchFixtures", dependencies: ["PolicySynth", .product(name: "Gatehouse", package: "Gatehouse")]),
        // The shipped research-crawler and mimisupply rules written by hand: the yardstick decide is reported against.
        .target(name: "HandWrittenBaseline", dependencies: [.product(name: "Gatehouse", package: "Gatehouse")]),
        // `swift run -c release policy-synth N DIR`: writes a synthetic set to disk.
        .executableTarget(name: "policy-synth", dependencies: ["PolicySynth"]),
        // Callgrind's client requests (zero, dump with a label) when valgrind's headers are installed, else no-ops: a
        // runner marks where a measured stretch starts and ends, on every thread at once.
        .target(name: "CallgrindMarks"),
        // `swift run -c release gatehouse-bench`: ContinuousClock medians/p99 and the scaling table, no plugin needed.
        .executableTarget(
            name: "gatehouse-bench",
            dependencies: [
                "BenchFixtures", "PolicySynth", "HandWrittenBaseline", "CallgrindMarks",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        // `swift run -c release bundle-bench`: signed bundles' build, verify and compile time as ratios to compiling the folder.
        .executableTarget(
            name: "bundle-bench",
            dependencies: ["BenchFixtures", "PolicySynth", .product(name: "GatehouseEngine", package: "Gatehouse")]),
        // ordo-one/benchmark suite: `swift package benchmark`.
        .executableTarget(
            name: "GatehouseBenchmarks",
            dependencies: [
                "BenchFixtures", "PolicySynth",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/GatehouseBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        // `swift test -c release`: the hand-written baseline and the interned path agree with `decide` on the mixes.
        .testTarget(name: "HandWrittenBaselineTests", dependencies: ["HandWrittenBaseline", "BenchFixtures"]),
    ]
)
