import Foundation
import GatehouseTestSupport
import Testing

/// The `policy` binary against recorded output: each folder under `CLIGolden/` holds policy folders, a
/// `commands.txt` (one command per line, run from that folder; `#` starts a comment) and `expected.txt` with
/// each command's standard output, standard error (lines marked `stderr|`) and exit status.
/// `POLICY_UPDATE_GOLDEN=1 swift test --filter CLIGoldenTests` rewrites the expected files.
///
/// Two things are normalized: JUnit `time` attributes (they measure this run) and ArgumentParser's usage text
/// after `Usage:` (it lists every flag, which is `--help`'s job, not these cases').
@Suite(.startsServers) struct CLIGoldenTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("CLIGolden")

    static var cases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test(arguments: cases)
    func outputMatchesGolden(_ name: String) async throws {
        let caseFolder = Self.folder.appendingPathComponent(name)
        let commands = try String(contentsOf: caseFolder.appendingPathComponent("commands.txt"), encoding: .utf8)
        var transcript = ""
        for line in commands.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("#") {
                transcript += line + "\n"
                continue
            }
            let arguments = line.split(separator: " ").map(String.init)
            let result = try await CLITests.run(arguments, in: caseFolder)
            transcript += "$ policy \(line)\n"
            transcript += Self.normalize(result.out)
            if !result.out.isEmpty, !result.out.hasSuffix("\n") { transcript += "\n" }
            for errorLine in Self.normalize(result.err).split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                transcript += "stderr| \(errorLine)\n"
            }
            transcript += "exit \(result.status)\n\n"
        }
        let expectedURL = caseFolder.appendingPathComponent("expected.txt")
        let expected = try Golden.expected(for: transcript, at: expectedURL)
        #expect(transcript == expected, "run POLICY_UPDATE_GOLDEN=1 swift test --filter CLIGoldenTests and review the diff")
    }

    static func normalize(_ text: String) -> String {
        var out = text.replacingOccurrences(of: #"time="[0-9]+\.[0-9]+""#, with: #"time="0.000""#, options: .regularExpression)
        if let usage = out.range(of: "Usage: ") {
            out = String(out[..<usage.lowerBound]) + "Usage: (see --help)\n"
        }
        return out
    }
}
