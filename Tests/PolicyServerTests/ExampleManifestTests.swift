import Foundation
import Testing
import GatehouseTestSupport

/// Every example package resolves from a copy of the repository in a folder not named like the checkout
/// (the root package is named `Gatehouse` in each manifest, not by its folder).
@Suite(.startsServers) struct ExampleManifestTests {
    static func run(_ executable: String, _ arguments: [String], in directory: URL, seconds: Int) async throws -> (Int32, String) {
        let run = try await Program(path: executable, arguments, in: directory).run(errors: .mergedIntoOutput, timeLimit: .seconds(seconds))
        if run.timedOut { return (-1, "timed out after \(seconds) s") }
        return (run.status, run.standardOutput)
    }

    @Test func examplesResolveFromAFolderOfAnotherName() async throws {
        let root = TestServer.root
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-copy-\(UUID().uuidString)/not-the-checkout-name")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let (status, listing) = try await Self.run("/usr/bin/git", ["ls-files", "-co", "--exclude-standard"], in: root, seconds: 30)
        try #require(status == 0)
        for path in listing.split(separator: "\n").map(String.init) where !path.isEmpty {
            let target = copy.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) {
                try FileManager.default.copyItem(at: root.appendingPathComponent(path), to: target)
            }
        }
        let swift = ["/opt/swift/usr/bin/swift", "/usr/bin/swift"].first { FileManager.default.fileExists(atPath: $0) } ?? "/usr/bin/swift"
        let examples = try FileManager.default.contentsOfDirectory(atPath: copy.appendingPathComponent("examples").path)
            .filter { FileManager.default.fileExists(atPath: copy.appendingPathComponent("examples/\($0)/Package.swift").path) }
        #expect(examples.contains("decide-in-process"))
        for example in examples.sorted() {
            let dir = copy.appendingPathComponent("examples/\(example)")
            let (code, output) = try await Self.run(swift, ["package", "resolve"], in: dir, seconds: 600)
            #expect(code == 0, "\(example): \(output)")
        }
    }
}
