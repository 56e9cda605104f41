// swift-tools-version: 6.1
import PackageDescription

// An app that embeds Gatehouse: loads a policy set once, then decides in-process.
let package = Package(
    name: "DecideInProcess",
    dependencies: [.package(name: "Gatehouse", path: "../..")],
    targets: [
        .executableTarget(name: "DecideInProcess", dependencies: [.product(name: "Gatehouse", package: "Gatehouse")])
    ]
)
