import Dispatch
import Foundation
import FuzzerDriver

/// Runs libFuzzer over the target its first argument names (`gatehouse-fuzz TARGET [libFuzzer arguments]`) and exits
/// with libFuzzer's status. SwiftPM links every executable through its own (renamed) main, so libFuzzer's main is
/// never used. The name is taken out of the arguments libFuzzer reads and kept in `GATEHOUSE_FUZZ_TARGET`: libFuzzer
/// starts its `-jobs`, `-fork` and `-merge` children from its own arguments, and they find the target there.
public func runFuzzer(choosingFrom targets: [String: (UnsafeRawBufferPointer) -> Void]) -> Never {
    var arguments = CommandLine.arguments
    let named = arguments.count > 1 ? targets[arguments[1]] : nil
    if named != nil {
        setenv(targetVariable, arguments[1], 1)
        arguments.remove(at: 1)
    }
    guard let body = named ?? ProcessInfo.processInfo.environment[targetVariable].flatMap({ targets[$0] }) else {
        let usage = "usage: gatehouse-fuzz TARGET [libFuzzer arguments]; TARGET: \(targets.keys.sorted().joined(separator: " "))\n"
        FileHandle.standardError.write(Data(usage.utf8))
        exit(64)
    }
    // libFuzzer calls back on this (the main) thread only; the closure is kept in a global for the C callback.
    FuzzBody.current = body
    // C strings that live for the whole process: libFuzzer keeps pointers into its argv.
    var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    var argc = CInt(arguments.count)
    exit(pointers.withUnsafeMutableBufferPointer { buffer in
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            FuzzBody.current?(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
            return 0
        }
    })
}

private let targetVariable = "GATEHOUSE_FUZZ_TARGET"

/// Calls a target written against libFuzzer's own signature (a pointer, never null, and a size) with `raw`.
public func withBytes(_ raw: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>, Int) -> CInt) -> CInt {
    guard let start = raw.baseAddress, raw.count > 0 else {
        var empty: UInt8 = 0
        return body(&empty, 0)
    }
    return body(start.assumingMemoryBound(to: UInt8.self), raw.count)
}

/// libFuzzer's own `main` (linked by -sanitize=fuzzer, never run: SwiftPM renames it) references this symbol, so it
/// must exist; it forwards to the body `runFuzzer(choosingFrom:)` chose.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzBody.current?(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

enum FuzzBody {
    nonisolated(unsafe) static var current: ((UnsafeRawBufferPointer) -> Void)?
}

/// Stops the run with a finding: libFuzzer writes the input that caused it.
public func finding(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("FINDING: " + message(), file: file, line: line)
}

/// The result of `operation`, waited for on the calling thread: libFuzzer's callback is synchronous and runs on the
/// main thread, never on Swift's cooperative pool, so blocking it here starves nothing. For fuzz targets only.
public func awaitResult<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await operation()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Reads structured choices from a fuzzer's bytes, front to back (libFuzzer's FuzzedDataProvider, in small): once the
/// bytes run out every read answers zero or empty, so any input is a complete, valid sequence of choices.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = Array(bytes) }
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isEmpty: Bool { offset >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A number in `0..<n` (n > 0), from one byte, or two when n > 256.
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0)
        if n <= 256 { return Int(byte()) % n }
        return (Int(byte()) << 8 | Int(byte())) % n
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    public mutating func uint64() -> UInt64 { (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(byte()) } }

    /// Up to `max` bytes: a length byte, then that many bytes.
    public mutating func chunk(max: Int = 255) -> [UInt8] {
        let count = min(below(256), max, bytes.count - offset)
        guard count > 0 else { return [] }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A string of up to `max` bytes (invalid UTF-8 repaired).
    public mutating func string(max: Int = 255) -> String { String(decoding: chunk(max: max), as: UTF8.self) }

    /// Every byte not read yet.
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }
}

/// A random number generator fed by the fuzzer's bytes, so a generator written for seeded tests becomes
/// coverage-guided: each draw takes the next byte (the generators' choices are small numbers); when they run out, it continues as SplitMix64 seeded by what was
/// read, so every input still makes a complete, deterministic choice.
public struct FuzzRandom: RandomNumberGenerator {
    var input: FuzzInput
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    public init(_ bytes: [UInt8]) { input = FuzzInput(bytes) }

    public mutating func next() -> UInt64 {
        if !input.isEmpty {
            let value = UInt64(input.byte())
            state = state &* 31 &+ value
            return value
        }
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n`.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    /// True `percent` times in a hundred.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// Carries a result from the task that computed it to the thread that waited for it (the semaphore orders the two).
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// How many times `needle`'s UTF-8 bytes occur in `haystack`'s. Targets compare text with this, not `String.contains`:
/// Foundation's `contains` on Linux reads a string holding U+0000 as if it ended there.
public func occurrences(of needle: String, in haystack: String) -> Int {
    let n = Array(needle.utf8), h = Array(haystack.utf8)
    guard !n.isEmpty, n.count <= h.count else { return 0 }
    return (0...(h.count - n.count)).reduce(0) { count, i in h[i..<i + n.count].elementsEqual(n) ? count + 1 : count }
}

/// A small policy set of four files that compiles clean (`policy check`: 1 test passed, 1 invariant held): the kinds of
/// file the shipped sets have (app actions with a feature, a limit and a consent; a project type with roles; tiers and
/// messages; a test and an invariant) in 1.5 KB rather than research-crawler's 13 KB or contacasal's 8 KB. The bundle
/// targets compile their set for every input they build or accept, so its size was most of their cost; they check the
/// bundle's reader and writer, which see files as bytes, while the compiler's coverage is `policy-compile`'s.
public enum SmallPolicySet {
    public static let files: [String: [UInt8]] = [
        "app.yaml": Array("""
            attributes:
              subject:
                analytics: bool
            resources:
              app:
                actions:
                  cloud_sync: {feature: cloud_sync}
                  add_source: {limit: sources}
                  send_analytics:
                    consent:
                      name: analytics
                      when: has(subject.attributes.analytics) && subject.attributes.analytics
                messages:
                  consent_required: "Your settings don't allow sending {consent}."

            """.utf8),
        "projects.yaml": Array("""
            resources:
              project:
                owner: ownerId
                ownerRole: owner
                memberActions: [view]
                roles:
                  viewer: {}
                  editor: {grants: [edit]}
                  owner: {}
                actions:
                  view: {}
                  edit: {}
                  delete: {}

            """.utf8),
        "tiers.yaml": Array("""
            tiers:
              free: {name: Free, default: true}
              pro: {name: Pro, products: [com.example.pro.monthly]}
            features:
              cloud_sync: {name: Cloud Sync, tiers: [pro]}
            limits:
              sources: {name: sources, counter: sources, tiers: {free: 50}, upgradeTo: pro}
            messages:
              requires_upgrade: "{feature} requires {tier}."
              limit_exceeded: "You've reached the limit of {limit} {limitName}."
              access_denied: "You don't have permission for this action."
              not_member: "You're not a member of this project."
              owner_only: "Only the owner can perform this action."
              unauthenticated: "Sign in to continue."

            """.utf8),
        "tests.yaml": Array("""
            tests:
              - name: pro has cloud sync
                request: {subject: {id: u1, tier: pro}, action: cloud_sync, resource: {type: app}}
                expect: {decision: allow, reason: allowed}
            invariants:
              - name: viewers never edit
                when: {resource: project, role: viewer, action: [edit, delete]}
                expect: deny

            """.utf8),
    ]
}
