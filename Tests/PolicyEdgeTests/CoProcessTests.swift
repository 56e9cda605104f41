import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `policy decide --jsonl` driven as a co-process: a line written is answered before standard input closes.
@Suite struct CoProcessTests {
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("policy").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("policy")
    }

    /// Reads from `fd` until a newline arrives or `seconds` pass; nil on timeout or end of file.
    static func readLine(_ fd: Int32, seconds: Int32) -> String? {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(Double(seconds))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !received.contains(UInt8(ascii: "\n")) {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            guard left > 0 else { return nil }
            var wait = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&wait, 1, left) > 0 else { return nil }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            guard n > 0 else { return nil }
            received += chunk[..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func aLoneLineIsAnsweredBeforeStandardInputCloses() throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["decide", "--policies", Shipped.root.appendingPathComponent("policies/research-crawler").path, "--jsonl"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
        }
        let fd = stdout.fileHandleForReading.fileDescriptor
        for (line, expected) in [
            (#"{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":3}}}"#, #"{"decision":"allow","reason":"allowed","limit":50,"used":3,"remaining":47"#),
            (#"{"action":"x"}"#, #"{"error":{"code":"invalid_request","field":"resource","kind":"missing_field","detail":"is required""#),
        ] {
            stdin.fileHandleForWriting.write(Data((line + "\n").utf8))
            // Standard input stays open: the answer must come anyway (30 s bounds a slow debug start).
            let answer = Self.readLine(fd, seconds: 30)
            #expect(answer?.hasPrefix(expected) == true, "\(answer ?? "no answer within 30 s")")
        }
        try stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
