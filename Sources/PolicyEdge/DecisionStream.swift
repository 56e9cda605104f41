#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PolicyEngine
import PolicyModel

/// The JSON Lines decision stream behind `policy decide --jsonl`: one request per line in, one decision per line
/// out, in order.
///
/// Input is read in large blocks; every complete line of a block is answered into one output buffer, written
/// with one `write(2)` per block, so a batch costs one system call per 64 KiB and a lone line is answered as
/// soon as it arrives (the co-process contract: nothing waits for standard input to close). A line that is
/// not a valid request gets `{"error":{"code":…,"field":…,"kind":…,"detail":…,"offset":…},"line":…}` (the error item
/// of a `/v1/decide/batch` answer, plus the line number) and the stream goes on; blank lines are
/// skipped; a line longer than `limits.maxBytes` is refused without being buffered whole.
public struct DecisionStream {
    public let policy: CompiledPolicy
    public let reader: RequestReader
    /// Lines seen so far, blank ones included (error objects name the line, counted from 1).
    public private(set) var lineNumber = 0
    /// One request value reused for every line, so reading allocates only for what a request adds.
    private var request = Request(action: "", resource: Resource(type: ""))
    /// Whether the rest of an overlong line is being skipped.
    private var discarding = false

    public init(policy: CompiledPolicy, limits: RequestLimits = .standard) {
        self.policy = policy
        self.reader = RequestReader(limits: limits)
    }

    /// Answers every complete line of `input` into `output` and returns how many bytes it consumed (up to and
    /// including the last newline); the caller keeps the rest for the next block. With `final`, the input is
    /// all there is and a last line without a newline is answered too.
    public mutating func answer(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], final: Bool = false) -> Int {
        guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
        var start = 0
        while start < input.count {
            guard let newline = Self.firstNewline(base + start, input.count - start).map({ start + $0 }) else { break }
            answerLine(UnsafeRawBufferPointer(start: base + start, count: newline - start), into: &output)
            start = newline + 1
        }
        if final, start < input.count {
            answerLine(UnsafeRawBufferPointer(start: base + start, count: input.count - start), into: &output)
            return input.count
        }
        // A partial line already past the limit is answered now and its remainder skipped up to its newline.
        if input.count - start > reader.limits.maxBytes {
            answerLine(UnsafeRawBufferPointer(start: base + start, count: input.count - start), into: &output)
            discarding = true
            return input.count
        }
        return start
    }

    private mutating func answerLine(_ line: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        if discarding {
            // The tail of a line already refused as too long.
            discarding = false
            return
        }
        lineNumber += 1
        if Self.isBlank(line) { return }
        do {
            try reader.read(line, into: &request)
            DecisionWriter.append(policy.decide(request), to: &output)
        } catch {
            Self.appendError(error, line: lineNumber, to: &output)
        }
        output.append(UInt8(ascii: "\n"))
    }

    /// `{"error":{"code","field"?,"kind","detail","offset"?},"line":N}`: a batch answer's error item plus the line.
    static func appendError(_ error: RequestError, line: Int, to out: inout [UInt8]) {
        DecisionWriter.appendErrorItem(error, line: line, to: &out)
    }

    @inline(__always)
    private static func firstNewline(_ p: UnsafePointer<UInt8>, _ count: Int) -> Int? {
        guard let found = memchr(p, 0x0A, count) else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(p)
    }

    private static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        for b in line where !(b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A) { return false }
        return true
    }

    /// Runs the stream from file descriptor `input` to `output` until end of input: read a block, answer its
    /// complete lines, write their answers at once. Returns an error number when reading or writing fails.
    public mutating func run(input: Int32 = 0, output: Int32 = 1, blockSize: Int = 1 << 16) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: blockSize)
        var filled = 0
        var out: [UInt8] = []
        out.reserveCapacity(blockSize * 2)
        while true {
            if filled == buffer.count {
                // One line longer than the block so far: grow, up to what a line may hold (see `answer`).
                buffer.append(contentsOf: repeatElement(0, count: buffer.count))
            }
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            let atEnd = n == 0
            filled += n
            let consumed = buffer.withUnsafeBytes { answer(UnsafeRawBufferPointer(rebasing: $0[..<filled]), into: &out, final: atEnd) }
            if consumed > 0 {
                buffer.withUnsafeMutableBytes { b in
                    if consumed < filled { b.baseAddress!.copyMemory(from: b.baseAddress! + consumed, byteCount: filled - consumed) }
                }
                filled -= consumed
            }
            if !out.isEmpty {
                if let failure = Self.writeAll(out, to: output) { return failure }
                out.removeAll(keepingCapacity: true)
            }
            if buffer.count > blockSize, filled < blockSize {
                buffer = [UInt8](buffer[..<blockSize])
            }
            if atEnd { return nil }
        }
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Int32? {
        bytes.withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = write(fd, b.baseAddress! + done, b.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return nil
        }
    }
}
