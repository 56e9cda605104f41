import Foundation

/// Reading what a started process (`policy serve`) prints first.
public enum ProcessOutput {
    /// The first line of `handle`, read on a thread of its own (a blocking read must not hold a cooperative
    /// thread); gives up after `seconds` with `CancellationError`.
    public static func firstLine(_ handle: FileHandle, seconds: Double) async throws -> String {
        final class Box: @unchecked Sendable {
            let lock = NSLock()
            var value: String?
        }
        let line = Box()
        Thread.detachNewThread {
            var bytes: [UInt8] = []
            while true {
                let chunk = handle.readData(ofLength: 1)
                if chunk.isEmpty || chunk.first == 0x0A { break }
                bytes += chunk
            }
            line.lock.withLock { line.value = String(decoding: bytes, as: UTF8.self) }
        }
        for _ in 0..<Int(seconds * 10) {
            if let seen = line.lock.withLock({ line.value }) { return seen }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CancellationError()
    }

    /// Runs `program` to its end on a thread of its own (never blocking one of the few threads async code runs on),
    /// its output in files (a pipe would wait for every process that inherited it, servers included): its standard
    /// output, or a `ProcessFailure` carrying its standard error.
    public static func run(
        _ program: URL, _ arguments: [String], environment: [String: String] = [:], in directory: URL? = nil
    ) async throws -> String {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            Thread {
                do {
                    let dir = FileManager.default.temporaryDirectory
                    let out = dir.appendingPathComponent("gatehouse-run-\(UUID().uuidString).out")
                    let err = dir.appendingPathComponent("gatehouse-run-\(UUID().uuidString).err")
                    FileManager.default.createFile(atPath: out.path, contents: nil)
                    FileManager.default.createFile(atPath: err.path, contents: nil)
                    defer {
                        try? FileManager.default.removeItem(at: out)
                        try? FileManager.default.removeItem(at: err)
                    }
                    let process = Process()
                    process.executableURL = program
                    process.arguments = arguments
                    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                    if let directory { process.currentDirectoryURL = directory }
                    process.standardOutput = try FileHandle(forWritingTo: out)
                    process.standardError = try FileHandle(forWritingTo: err)
                    try process.run()
                    process.waitUntilExit()
                    let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
                    guard process.terminationStatus == 0 else {
                        let message = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
                        throw ProcessFailure(description: "\(program.lastPathComponent) \(arguments.joined(separator: " ")): \(message)")
                    }
                    continuation.resume(returning: text)
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }
}

/// A program `ProcessOutput.run` started ended with a non-zero status: its command line and standard error.
public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
}
