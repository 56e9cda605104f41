// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Gatehouse",
    // tvOS, watchOS and visionOS are left out: not built or tested for them (docs/platforms.md).
    platforms: [.iOS(.v18), .macOS(.v15)],
    products: [
        .library(name: "Gatehouse", targets: ["Gatehouse"]),
        // The engine alone for apps: load/compile a policy set and decide, with no identity, SQL or NIO.
        .library(name: "GatehouseEngine", targets: ["GatehouseEngine"]),
        // The PostgreSQL identity store, and opening either store from a `--database` value.
        .library(name: "IdentityPostgres", targets: ["IdentityPostgres"]),
        .executable(name: "policy", targets: ["policy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Already resolved for Hummingbird; named because PolicyServer imports their modules itself (NIOCore,
        // HTTPTypes, and NIOHTTPTypes for the read deadline's channel handler), at the versions Hummingbird resolves.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The PostgreSQL identity store (IdentityPostgres): several `policy serve` replicas on one database.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Already resolved for postgres-nio; named so IdentityPostgres can build its TLS configuration.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // App Store signed transactions (Identity): the x5c chain to Apple Root CA - G3, checked as Apple's
        // App Store Server Library does. swift-asn1 is already resolved for it; named for ASN1ObjectIdentifier.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // `swift package generate-documentation` (scripts/check-docs.sh --archive); a plugin, so no target links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Plain value types of the decision contract; Foundation only.
        .target(name: "PolicyModel"),
        // YAML to a located syntax tree, and the expression parser.
        .target(name: "PolicySyntax", dependencies: ["PolicyModel", .product(name: "Yams", package: "Yams")]),
        // CompiledPolicy, decide, explain: pure, no I/O, no locks.
        .target(name: "PolicyEngine", dependencies: ["PolicyModel"]),
        // Named passes from syntax tree to CompiledPolicy.
        .target(
            name: "PolicyCompiler",
            dependencies: ["PolicyModel", "PolicySyntax", "PolicyEngine", .product(name: "Crypto", package: "swift-crypto")]),
        // The JSON edge: the JSON Lines decision stream behind `policy decide --jsonl` (block reads, one write per block).
        .target(name: "PolicyEdge", dependencies: ["PolicyModel", "PolicyEngine"]),
        // Policy tests, diagnostics rendering; later invariants and diffs.
        .target(name: "PolicyVerification", dependencies: ["PolicyModel", "PolicySyntax", "PolicyCompiler", "PolicyEngine"]),
        // Users, sessions, PIN, device keys, Apple tokens, audit; the Store protocol and its SQLite form.
        .target(name: "Identity", dependencies: [
            "PolicyModel",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ]),
        // The PostgreSQL form of the identity store, on postgres-nio; its own target so Identity stays free of NIO.
        .target(name: "IdentityPostgres", dependencies: [
            "Identity",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // A child process for the crash test: writes sessions and audit rows until killed.
        .executableTarget(name: "identity-crash-writer", dependencies: ["Identity"]),
        // Release-build timings of the identity flows (KDF, sign-in, token validation).
        .executableTarget(name: "identity-bench", dependencies: ["Gatehouse", "IdentityPostgres", .product(name: "_CryptoExtras", package: "swift-crypto")]),
        // The engine-only facade an app embeds: PolicyModel, PolicyCompiler and PolicyEngine, and loading from a
        // folder, a Bundle or bytes. Its closure must stay free of Identity, GRDB, PostgresNIO, NIO and Hummingbird
        // (GatehouseEngineTests checks).
        .target(name: "GatehouseEngine", dependencies: ["PolicyModel", "PolicyCompiler", "PolicyEngine"]),
        // The facade apps import.
        .target(name: "Gatehouse", dependencies: ["PolicyModel", "PolicyCompiler", "PolicyEngine", "Identity"]),
        // The HTTP server over the facade (`policy serve`): routes, problem+json, reload, metrics.
        .target(
            name: "PolicyServer",
            dependencies: [
                "Gatehouse", "IdentityPostgres", "PolicyModel", "PolicyCompiler", "PolicyEngine", "PolicyVerification",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        // Argument parsing only; every decision of substance is a library call.
        .target(
            name: "PolicyCLI",
            dependencies: [
                "PolicyModel", "PolicyCompiler", "PolicyEngine", "PolicyVerification", "PolicyEdge", "PolicyServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: ["BuildStamp"]),
        .executableTarget(
            name: "policy", dependencies: ["PolicyCLI", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // `policy version`'s git commit and build date: the plugin runs the tool, which reads git's files.
        .executableTarget(name: "build-stamp"),
        .plugin(name: "BuildStamp", capability: .buildTool(), dependencies: ["build-stamp"]),

        // Helpers shared by the test targets (a seeded generator); not a product.
        .target(name: "GatehouseTestSupport", path: "Tests/TestSupport"),
        // A test certificate authority and App Store signer (root, WWDR-like intermediate, leaf; P-256) for
        // the purchase tests of Identity and the server; not a product.
        .target(
            name: "AppStoreTestSupport",
            dependencies: [
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/AppStoreTestSupport"),
        // A plain evaluator over the syntax tree that the compiler's and the engine's differential tests check against.
        .target(name: "GatehouseReferenceModel", dependencies: ["PolicyCompiler", "PolicyEngine", "PolicySyntax"], path: "Tests/ReferenceModel"),
        .testTarget(name: "PolicyModelTests", dependencies: ["PolicyModel", "GatehouseTestSupport"]),
        .testTarget(name: "PolicySyntaxTests", dependencies: ["PolicySyntax", "GatehouseTestSupport"]),
        .testTarget(name: "PolicyCompilerTests", dependencies: ["PolicyCompiler", "PolicySyntax", "PolicyEngine", "GatehouseTestSupport", "GatehouseReferenceModel"]),
        .testTarget(
            name: "PolicyEdgeTests",
            dependencies: ["PolicyEdge", "PolicyCompiler", "PolicyEngine", "PolicyModel", "PolicyVerification", "GatehouseTestSupport", "policy"]),
        .testTarget(
            name: "PolicyEngineTests",
            // The compiler and syntax build the policies the engine's tests decide with (generated sets, shipped sets).
            dependencies: ["PolicyEngine", "PolicyModel", "PolicyCompiler", "PolicySyntax", "GatehouseTestSupport", "GatehouseReferenceModel"]),
        .testTarget(
            name: "PolicyVerificationTests",
            dependencies: ["PolicyVerification", "PolicyCompiler", "PolicyEngine", "PolicyModel", "GatehouseTestSupport"]),
        .testTarget(
            name: "PolicyCorpusTests",
            dependencies: ["PolicyModel", "PolicyCompiler", "PolicyEngine", "PolicyVerification", "policy", "GatehouseTestSupport"],
            exclude: ["Corpus", "CLIGolden", "ReportGolden"]),
        .testTarget(
            name: "PolicyServerTests",
            dependencies: [
                "PolicyServer", "Gatehouse", "PolicyModel", "policy", "GatehouseTestSupport", "IdentityPostgres", "AppStoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),  // the replica tests sign device challenges
            ]),
        .testTarget(
            name: "GatehouseEngineTests",
            dependencies: ["GatehouseEngine", "PolicyVerification", "GatehouseTestSupport", .product(name: "Yams", package: "Yams")]),
        .testTarget(name: "GatehouseTests", dependencies: ["Gatehouse", "GatehouseTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "IdentityTests", dependencies: [
            "Identity", "IdentityPostgres", "identity-crash-writer", "AppStoreTestSupport", "GatehouseTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
    ]
)

// libFuzzer targets (scripts/fuzz.sh), declared only when GATEHOUSE_FUZZ=1 so the main build and
// `swift test` never see them; they build with -sanitize=fuzzer,address in their own .build-fuzz.
// Living in this package lets them call package-level APIs (the expression parser and checker).
if Context.environment["GATEHOUSE_FUZZ"] == "1" {
    package.targets += [
        .target(name: "FuzzerDriver", path: "fuzz/Sources/FuzzerDriver"),
        .executableTarget(
            name: "fuzz-policy-compile",
            dependencies: ["FuzzerDriver", "PolicyCompiler", "PolicyEngine", "PolicyModel", "PolicyVerification"],
            path: "fuzz/Sources/fuzz-policy-compile"),
        .executableTarget(
            name: "fuzz-expression", dependencies: ["FuzzerDriver", "PolicyCompiler", "PolicySyntax", "PolicyEngine", "PolicyModel"],
            path: "fuzz/Sources/fuzz-expression"),
        .executableTarget(
            name: "fuzz-request", dependencies: ["FuzzerDriver", "PolicyCompiler", "PolicyEngine", "PolicyModel"],
            path: "fuzz/Sources/fuzz-request"),
    ]
}
