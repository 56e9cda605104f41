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
}
