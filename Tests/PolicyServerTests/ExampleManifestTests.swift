import Foundation
import Testing

/// Every example package resolves from a copy of the repository in a folder not named like the checkout
/// (the root package is named `Gatehouse` in each manifest, not by its folder).
@Suite struct ExampleManifestTests {
    static func run(_ executable: String, _ arguments: [String], in directory: URL, seconds: Int) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        // Drained on a thread of its own so a full pipe cannot stall the child.
        final class Box: @unchecked Sendable { var data = Data() }
        let box = Box()
        let reader = Thread { box.data = out.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        for _ in 0..<(seconds * 10) where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning {
            process.terminate()
            return (-1, "timed out after \(seconds) s")
        }
        for _ in 0..<50 where !reader.isFinished { try await Task.sleep(for: .milliseconds(100)) }
        return (process.terminationStatus, String(decoding: box.data, as: UTF8.self))
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
