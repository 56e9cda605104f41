import Foundation
import Subprocess
import Synchronization

#if canImport(System)
import System
#else
import SystemPackage
#endif

/// A program a test launches: its executable, arguments, environment and working directory.
///
/// The one way the test targets start a process. It spawns through swift-subprocess (`posix_spawn` with a
/// close-from file action), not Foundation's `Process`, whose `run()` on Linux copies a fixed-size name out of
/// each `/proc/self/fd` entry and so reads past the end of short ones: test runs died there with signal 11
/// (docs/testing.md).
public struct Program: Sendable {
    /// The variables a child sees.
    public enum Environment: Sendable {
        /// This process's, with `adding` set over it.
        case inherited(adding: [String: String])
        /// Exactly these, nothing inherited (an empty one is an empty environment).
        case only([String: String])

        /// This process's as it is.
        public static var inherited: Self { .inherited(adding: [:]) }
    }

    /// Where a child that runs to its end writes its standard error.
    public enum ErrorOutput: Sendable {
        /// Kept apart: `Finished.standardError`.
        case separate
        /// Into the same pipe as standard output, interleaved as written (`Finished.standardError` is empty).
        case mergedIntoOutput
    }

    public var executable: URL
    public var arguments: [String]
    public var environment: Environment
    public var directory: URL?

    public init(_ executable: URL, _ arguments: [String] = [], environment: Environment = .inherited, in directory: URL? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
    }

    public init(path: String, _ arguments: [String] = [], environment: Environment = .inherited, in directory: URL? = nil) {
        self.init(URL(fileURLWithPath: path), arguments, environment: environment, in: directory)
    }

    /// The most a run collects of one stream; more is an error (`outputLimitExceeded`), not a silent cut.
    static let outputLimit = 256 << 20

    /// Runs the program to its end: what it printed and how it ended.
    ///
    /// `input` is written to its standard input, which is then closed (none: `/dev/null`). With a `timeLimit`, the
    /// child gets SIGTERM when it runs out, then SIGKILL 5 s later, and `Finished.timedOut` says so.
    public func run(input: String? = nil, errors: ErrorOutput = .separate, timeLimit: Duration? = nil) async throws -> Finished {
        switch (input, errors) {
        case (nil, .separate): try await collect(input: .none, error: .string(limit: Self.outputLimit), timeLimit: timeLimit) { $0 }
        case (nil, .mergedIntoOutput): try await collect(input: .none, error: .combinedWithOutput, timeLimit: timeLimit) { "" }
        case (let text?, .separate):
            try await collect(input: .string(text), error: .string(limit: Self.outputLimit), timeLimit: timeLimit) { $0 }
        case (let text?, .mergedIntoOutput): try await collect(input: .string(text), error: .combinedWithOutput, timeLimit: timeLimit) { "" }
        }
    }

    /// Runs the program to its end and returns its standard output; a non-zero exit throws `ProcessFailure` with its
    /// standard error.
    public func output() async throws -> String {
        let finished = try await run()
        guard finished.termination == .exited(0) else {
            throw ProcessFailure(
                description: "\(executable.lastPathComponent) \(arguments.joined(separator: " ")): \(finished.termination): \(finished.standardError)")
        }
        return finished.standardOutput
    }

    /// Starts the program and returns while it runs: its standard output is read line by line (`nextLine`), its
    /// standard error appended to `errorLog` (none: discarded), and its standard input, when `acceptingInput`, is
    /// written with `write` (otherwise `/dev/null`).
    ///
    /// The child is the caller's to stop (`stop`, `kill`); one still running when its `RunningProgram` goes away is
    /// killed (SIGKILL), so a test that ends early leaves no child behind.
    public func start(errorLog: URL? = nil, acceptingInput: Bool = false) async throws -> RunningProgram {
        var logDescriptor: FileDescriptor?
        if let errorLog {
            logDescriptor = try FileDescriptor.open(
                FilePath(errorLog.path), .writeOnly, options: [.append, .create, .closeOnExec], permissions: [.ownerReadWrite])
        }
        switch (logDescriptor, acceptingInput) {
        case (nil, false): return try await launch(input: .none, error: .discarded)
        case (nil, true): return try await launch(input: .inputWriter, error: .discarded)
        case (let fd?, false): return try await launch(input: .none, error: .fileDescriptor(fd, closeAfterSpawningProcess: true))
        case (let fd?, true): return try await launch(input: .inputWriter, error: .fileDescriptor(fd, closeAfterSpawningProcess: true))
        }
    }

    private var subprocessEnvironment: Subprocess.Environment {
        get throws {
            func keys(_ values: [String: String]) throws -> [Subprocess.Environment.Key: String] {
                var keyed: [Subprocess.Environment.Key: String] = [:]
                for (name, value) in values {
                    guard let key = Subprocess.Environment.Key(rawValue: name) else {
                        throw ProcessFailure(description: "\(executable.lastPathComponent): invalid environment variable name '\(name)'")
                    }
                    keyed[key] = value
                }
                return keyed
            }
            switch environment {
            case .inherited(let adding): return .inherit.updating(try keys(adding))
            case .only(let values): return .custom(try keys(values))
            }
        }
    }

    private func collect<Input: InputProtocol, ErrorStream: ErrorOutputProtocol>(
        input: Input, error: ErrorStream, timeLimit: Duration?, errorText: (ErrorStream.OutputType) -> String
    ) async throws -> Finished {
        let timedOut = TimeLimitFlag()
        let result = try await Subprocess.run(
            .path(FilePath(executable.path)), arguments: Arguments(arguments), environment: try subprocessEnvironment,
            workingDirectory: directory.map { FilePath($0.path) }, input: input, output: .string(limit: Self.outputLimit), error: error
        ) { execution -> Void in
            guard let timeLimit else { return }
            // Timed on a dispatch queue from the child's start, not by a task's sleep: a sleeping task wakes only when
            // a cooperative thread is free, and on a starved machine that was seconds after the limit (a 200 ms limit
            // fired after the child's `sleep 30` had ended).
            let deadline = DispatchTime.now() + .nanoseconds(Int(timeLimit.components.seconds) * 1_000_000_000 + Int(timeLimit.components.attoseconds / 1_000_000_000))
            DispatchQueue.global().asyncAfter(deadline: deadline) {
                guard !timedOut.ended.load(ordering: .acquiring) else { return }
                timedOut.raised.store(true, ordering: .relaxed)
                try? execution.send(signal: .terminate)
                DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(5)) {
                    guard !timedOut.ended.load(ordering: .acquiring) else { return }
                    try? execution.send(signal: .kill)
                }
            }
        }
        timedOut.ended.store(true, ordering: .releasing)
        return Finished(
            termination: Termination(result.terminationStatus), standardOutput: result.standardOutput,
            standardError: errorText(result.standardError), timedOut: timedOut.raised.load(ordering: .relaxed))
    }

    private func launch<Input: InputProtocol, ErrorStream: ErrorOutputProtocol>(input: Input, error: ErrorStream) async throws -> RunningProgram {
        let state = RunningProgram.State()
        let executable = FilePath(executable.path), arguments = Arguments(arguments), environment = try subprocessEnvironment
        let directory = directory.map { FilePath($0.path) }
        let name = self.executable.lastPathComponent
        let started = AsyncStream<Result<pid_t, any Error>>.makeStream()
        Task.detached {
            do {
                let result = try await Subprocess.run(
                    .path(executable), arguments: arguments, environment: environment, workingDirectory: directory, input: input,
                    output: .sequence, error: error
                ) { execution in
                    state.began(execution.processIdentifier, signal: { try? execution.send(signal: Signal(rawValue: $0)) })
                    if let writer = (execution as? Execution<CustomWriteInput, SequenceOutput, ErrorStream>)?.standardInputWriter {
                        state.accept(writer)
                    }
                    started.continuation.yield(.success(execution.processIdentifier.value))
                    var pending: [UInt8] = []
                    for try await chunk in execution.standardOutput {
                        chunk.withUnsafeBytes { pending.append(contentsOf: $0) }
                        while let newline = pending.firstIndex(of: 0x0A) {
                            state.append(line: String(decoding: pending[..<newline], as: UTF8.self))
                            pending.removeSubrange(...newline)
                        }
                    }
                    // A last line without its newline was cut off: not a line.
                }
                state.ended(Termination(result.terminationStatus))
            } catch {
                started.continuation.yield(.failure(error))
                state.ended(.failed("\(name): \(error)"))
            }
            started.continuation.finish()
        }
        for await outcome in started.stream {
            switch outcome {
            case .success(let pid): return RunningProgram(processIdentifier: pid, state: state, name: name)
            case .failure(let error): throw error
            }
        }
        throw ProcessFailure(description: "\(name) did not start")
    }
}

/// Raised when a run's time limit ran out; `ended` once the run is over, so a late timer signals nothing (the
/// child's process id may be another process's by then).
final class TimeLimitFlag: Sendable {
    let raised = Atomic<Bool>(false)
    let ended = Atomic<Bool>(false)
}

/// How a child ended.
public enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// It exited with this status.
    case exited(Int32)
    /// A signal ended it.
    case signaled(Int32)
    /// Watching it failed (reading its output, or reaping it): the reason; whether it still runs is unknown.
    case failed(String)

    init(_ status: TerminationStatus) {
        switch status {
        case .exited(let code): self = .exited(code)
        case .signaled(let signal): self = .signaled(signal)
        }
    }

    /// The exit status, or the signal's number, as Foundation's `terminationStatus` gave it; -1 when watching failed.
    public var status: Int32 {
        switch self {
        case .exited(let code), .signaled(let code): code
        case .failed: -1
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exited with \(code)"
        case .signaled(let signal): "stopped by signal \(signal)"
        case .failed(let reason): "not watched to its end: \(reason)"
        }
    }
}

/// What a program that ran to its end printed, and how it ended.
public struct Finished: Sendable {
    public let termination: Termination
    public let standardOutput: String
    /// Empty when standard error was merged into standard output.
    public let standardError: String
    /// The time limit ran out and the child was stopped.
    public let timedOut: Bool

    /// `termination.status`: the exit status, or the signal's number.
    public var status: Int32 { termination.status }
}

/// A child started by `Program.start`: its standard output line by line, signals, and a bounded stop.
public final class RunningProgram: Sendable {
    public let processIdentifier: pid_t
    let state: State
    let name: String

    init(processIdentifier: pid_t, state: State, name: String) {
        self.processIdentifier = processIdentifier
        self.state = state
        self.name = name
    }

    deinit {
        if state.termination == nil { state.signal(SIGKILL) }
    }

    /// Whether the child has not ended yet.
    public var isRunning: Bool { state.termination == nil }

    /// How it ended; nil while it runs.
    public var termination: Termination? { state.termination }

    /// The next complete line of standard output not yet returned, waiting up to `timeLimit` for it; throws
    /// `ProcessFailure` when none comes in time or the output ends first.
    public func nextLine(within timeLimit: Duration = .seconds(60)) async throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeLimit)
        while true {
            switch state.takeLine() {
            case .line(let line): return line
            case .ended: throw ProcessFailure(description: "\(name) ended its output (\(termination.map { "\($0)" } ?? "still running"))")
            case .none:
                guard clock.now < deadline else { throw ProcessFailure(description: "\(name) printed no line within \(timeLimit)") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The complete lines of standard output not yet returned, without waiting.
    public func unreadLines() -> [String] { state.takeAllLines() }

    /// Sends `signal` (SIGHUP, SIGTERM, ...) while the child runs; nothing once it has ended.
    public func signal(_ signal: Int32) {
        guard state.termination == nil else { return }
        state.signal(signal)
    }

    /// SIGKILL now, without waiting: for a `defer`.
    public func kill() { signal(SIGKILL) }

    /// Waits up to `timeLimit` for the child to end: how it ended, or nil if it still runs.
    @discardableResult
    public func wait(within timeLimit: Duration) async -> Termination? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeLimit)
        while state.termination == nil, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return state.termination
    }

    /// Sends `signal` (SIGTERM unless told), waits up to `grace` for the end, then SIGKILL and a bounded wait: how it
    /// ended (nil only if even SIGKILL did not end it within 30 s).
    @discardableResult
    public func stop(_ signal: Int32 = SIGTERM, grace: Duration = .seconds(10)) async -> Termination? {
        self.signal(signal)
        if let ended = await wait(within: grace) { return ended }
        kill()
        return await wait(within: .seconds(30))
    }

    /// Writes `text` to the child's standard input (started with `acceptingInput`).
    public func write(_ text: String) async throws {
        guard let writer = state.writer else { throw ProcessFailure(description: "\(name) was started without standard input") }
        _ = try await writer.write(Array(text.utf8))
    }

    /// Closes the child's standard input (its end of file).
    public func closeInput() async throws {
        guard let writer = state.writer else { throw ProcessFailure(description: "\(name) was started without standard input") }
        try await writer.finish()
    }

    /// What the launching task and the tests share: the lines read, the way to signal, the end.
    final class State: Sendable {
        struct Inner {
            var lines: [String] = []
            var cursor = 0
            var termination: Termination?
            var signal: (@Sendable (Int32) -> Void)?
            var writer: StandardInputWriter?
        }
        enum Take { case line(String), ended, none }
        let inner = Mutex(Inner())

        func began(_ pid: ProcessIdentifier, signal: @escaping @Sendable (Int32) -> Void) { inner.withLock { $0.signal = signal } }
        func accept(_ writer: StandardInputWriter) { inner.withLock { $0.writer = writer } }
        func append(line: String) { inner.withLock { $0.lines.append(line) } }
        func ended(_ termination: Termination) { inner.withLock { $0.termination = termination; $0.signal = nil } }
        var termination: Termination? { inner.withLock { $0.termination } }
        var writer: StandardInputWriter? { inner.withLock { $0.writer } }

        func signal(_ number: Int32) {
            // Sent under the lock so it cannot race `ended`, after which the process descriptor is gone.
            inner.withLock { $0.signal?(number) }
        }

        func takeLine() -> Take {
            inner.withLock { inner in
                if inner.cursor < inner.lines.count {
                    inner.cursor += 1
                    return .line(inner.lines[inner.cursor - 1])
                }
                return inner.termination == nil ? .none : .ended
            }
        }

        func takeAllLines() -> [String] {
            inner.withLock { inner in
                defer { inner.cursor = inner.lines.count }
                return Array(inner.lines[inner.cursor...])
            }
        }
    }
}

/// A program `Program.output()` ran ended otherwise than with status 0: its command line and standard error.
public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}
