// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Gatehouse",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PolicyModel", targets: ["PolicyModel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .target(name: "PolicyModel"),
        .testTarget(name: "PolicyModelTests", dependencies: ["PolicyModel"]),
    ]
)
