import Foundation
import GatehouseTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test targets' one way to launch a program: what each call site relies on, shown with `/bin/sh`.
@Suite(.startsServers) struct ProgramTests {
    static func shell(_ script: String, environment: Program.Environment = .inherited, in directory: URL? = nil) -> Program {
        Program(path: "/bin/sh", ["-c", script], environment: environment, in: directory)
    }

    // MARK: Running to the end

    @Test func aRunCollectsBothStreamsAndTheExitStatus() async throws {
        let run = try await Self.shell("printf 'out\\n'; printf 'err\\n' >&2; exit 3").run()
        #expect(run.standardOutput == "out\n")
        #expect(run.standardError == "err\n")
        #expect(run.termination == .exited(3))
        #expect(run.status == 3)
        #expect(!run.timedOut)
    }

    @Test func mergedStreamsKeepTheOrderWritten() async throws {
        let run = try await Self.shell("echo one; echo two >&2; echo three").run(errors: .mergedIntoOutput)
        #expect(run.standardOutput == "one\ntwo\nthree\n")
        #expect(run.standardError == "")
    }

    @Test func inputIsWrittenAndClosed() async throws {
        let run = try await Program(path: "/bin/cat").run(input: "a line\nand another")
        #expect(run.standardOutput == "a line\nand another")
        let none = try await Program(path: "/bin/cat").run()
        #expect(none.standardOutput == "" && none.status == 0)
    }

    @Test func anEnvironmentIsInheritedWithAdditionsOrGivenExactly() async throws {
        let path = try #require(ProcessInfo.processInfo.environment["PATH"])
        let added = try await Self.shell(#"printf '%s|%s' "$GATEHOUSE_PROGRAM_TEST" "$PATH""#, environment: .inherited(adding: ["GATEHOUSE_PROGRAM_TEST": "set"])).run()
        #expect(added.standardOutput == "set|\(path)")
        let only = try await Program(path: "/usr/bin/env", environment: .only(["ONLY_THIS": "1"])).run()
        #expect(only.standardOutput == "ONLY_THIS=1\n")
        let empty = try await Program(path: "/usr/bin/env", environment: .only([:])).run()
        #expect(empty.standardOutput == "")
    }

    @Test func theWorkingDirectoryIsTheOneGiven() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-program-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await Program(path: "/bin/pwd", ["-P"], in: dir).run()
        #expect(run.standardOutput == dir.resolvingSymlinksInPath().path + "\n")
    }

    @Test func aChildPastItsTimeLimitIsStoppedAndSaysSo() async throws {
        let run = try await Self.shell("echo started; exec sleep 30").run(timeLimit: .milliseconds(200))
        #expect(run.timedOut)
        #expect(run.termination == .signaled(SIGTERM))
        #expect(run.standardOutput == "started\n")
    }

    @Test func aChildThatIgnoresSIGTERMIsKilledAfterItsTimeLimit() async throws {
        let run = try await Self.shell("trap '' TERM; echo started; while :; do sleep 1; done").run(timeLimit: .milliseconds(200))
        #expect(run.timedOut)
        #expect(run.termination == .signaled(SIGKILL))
    }

    @Test func outputFailsOnANonZeroExitWithStandardError() async throws {
        #expect(try await Self.shell("echo fine").output() == "fine\n")
        let failure = await #expect(throws: ProcessFailure.self) { try await Self.shell("echo why >&2; exit 2").output() }
        #expect(failure?.description.contains("why") == true)
        #expect(failure?.description.contains("exited with 2") == true)
    }

    @Test func aMissingExecutableIsAnError() async throws {
        await #expect(throws: (any Error).self) { try await Program(path: "/nonexistent/gatehouse-program").run() }
        await #expect(throws: (any Error).self) { try await Program(path: "/nonexistent/gatehouse-program").start() }
    }

    // MARK: A long-lived child

    @Test func aStartedChildIsReadLineByLineAndStopsOnSIGTERM() async throws {
        let child = try await Self.shell("echo 'listening on here'; echo second; exec sleep 30").start()
        #expect(child.isRunning)
        #expect(try await child.nextLine(within: .seconds(30)) == "listening on here")
        #expect(try await child.nextLine(within: .seconds(30)) == "second")
        await #expect(throws: ProcessFailure.self) { try await child.nextLine(within: .milliseconds(100)) }
        #expect(await child.stop() == .signaled(SIGTERM))
        #expect(!child.isRunning)
    }

    @Test func aChildThatIgnoresSIGTERMIsKilledAfterTheGrace() async throws {
        let child = try await Self.shell("trap '' TERM; echo ready; while :; do sleep 1; done").start()
        #expect(try await child.nextLine(within: .seconds(30)) == "ready")
        #expect(await child.stop(grace: .milliseconds(300)) == .signaled(SIGKILL))
    }

    @Test func aSignalReachesTheChild() async throws {
        let child = try await Self.shell("trap 'echo hangup' HUP; echo ready; while :; do sleep 0.1; done").start()
        defer { child.kill() }
        #expect(try await child.nextLine(within: .seconds(30)) == "ready")
        child.signal(SIGHUP)
        #expect(try await child.nextLine(within: .seconds(30)) == "hangup")
    }

    @Test func aChildThatExitsReportsHowAndItsRemainingLines() async throws {
        let child = try await Self.shell("echo a; echo b; printf 'cut'; exit 4").start()
        #expect(await child.wait(within: .seconds(30)) == .exited(4))
        // Complete lines only: the last, without its newline, was cut off.
        #expect(child.unreadLines() == ["a", "b"])
        #expect(child.unreadLines() == [])
        await #expect(throws: ProcessFailure.self) { try await child.nextLine(within: .seconds(1)) }
    }

    @Test func standardInputIsWrittenAndClosed() async throws {
        let child = try await Program(path: "/bin/cat").start(acceptingInput: true)
        try await child.write("ping\n")
        #expect(try await child.nextLine(within: .seconds(30)) == "ping")
        try await child.closeInput()
        #expect(await child.wait(within: .seconds(30)) == .exited(0))
        let without = try await Program(path: "/bin/cat").start()
        await #expect(throws: ProcessFailure.self) { try await without.write("x") }
        #expect(await without.wait(within: .seconds(30)) == .exited(0))  // /dev/null: its input ends at once
    }

    @Test func standardErrorGoesToTheLogWhenGiven() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-program-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let child = try await Self.shell("echo to-the-log >&2; echo done").start(errorLog: log)
        #expect(try await child.nextLine(within: .seconds(30)) == "done")
        #expect(await child.wait(within: .seconds(30)) == .exited(0))
        #expect(try String(contentsOf: log, encoding: .utf8) == "to-the-log\n")
    }

    @Test func aChildLeftRunningIsKilledWhenItsHandleGoes() async throws {
        var child: RunningProgram? = try await Self.shell("echo ready; exec sleep 30").start()
        let pid = try #require(child?.processIdentifier)
        #expect(try await child?.nextLine(within: .seconds(30)) == "ready")
        child = nil
        // Bounded: the kill is sent at once; the reap follows within the library's monitor.
        var gone = false
        for _ in 0..<500 where !gone {
            gone = kill(pid, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone, "the child \(pid) outlived its handle")
    }
}
