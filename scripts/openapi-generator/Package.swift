// swift-tools-version: 6.1
// Builds Apple's swift-openapi-generator for scripts/generate-client.sh, in a package of its own so the main package
// never depends on the generator (nor on OpenAPIKit): GatehouseClient compiles the committed code under
// Sources/GatehouseClient/Generated/, and only the runtime (swift-openapi-runtime, swift-openapi-urlsession) links in.
import PackageDescription

let package = Package(
    name: "GatehouseOpenAPIGenerator",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Exact: the committed code is what this version writes; a new version is a deliberate regeneration.
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3")
    ],
    targets: []
)
