import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-decide recorded decisions under a candidate policy set and report whom the change hits.",
        discussion: """
            Reads decision records (one JSON object per line, as `policy serve --decision-log` records them and \
            `GET /v1/operator/decisions` exports them), decides each again under the set in --policies, and compares \
            with the same folder at --base REV, or without --base with the outcome each record holds. Flips are \
            grouped by action, direction (allow-to-deny, deny-to-allow, reason-changed) and subject shape (tier, \
            roles, auth), with counts, share of the records and three pseudonymised examples. A record that does not \
            parse any more is reported with its line, never fatal.

              policy replay decisions.jsonl --policies policies/research-crawler
              policy replay decisions.jsonl --policies policies/research-crawler --base origin/main --format markdown

            Exit codes: 0 replayed (flips or not); 1 a set does not load; 2 --fail-on matched; 64 usage error.
            """)

    @Argument(help: "The decision records, one JSON object per line ('-' for standard input).")
    var records: String

    @Option(help: "The candidate policy set folder.")
    var policies: String

    @Option(help: "Compare with the --policies folder as committed at this git revision, instead of the recorded outcomes.")
    var base: String?

    @Option(help: "Output format: text, json or markdown (a pull-request comment).")
    var format: OutputFormat = .text

    @Option(help: ArgumentHelp("Exit 2 when a decision flips from allow to deny, or when any decision changes.", valueName: "allow-to-deny|any"))
    var failOn: FailOn?

    enum FailOn: String, ExpressibleByArgument, CaseIterable {
        case allowToDeny = "allow-to-deny"
        case any
    }

    func validate() throws {
        if format == .github { throw ValidationError("replay writes text, json or markdown") }
    }

    func run() async throws {
        let input: FileHandle
        if records == "-" {
            input = FileHandle.standardInput
        } else {
            guard let opened = FileHandle(forReadingAtPath: records) else { throw ValidationError("cannot read '\(records)'") }
            input = opened
        }
        let candidate = try loadedOrExit(PolicyCompiler.load(directory: policies))
        var basePolicy: CompiledPolicy?
        if let base { basePolicy = try loadedOrExit(try await GitRevision.load(folder: policies, revision: base)) }
        // A block at a time: a file of a million records (500 MB) is never held whole.
        var replayer = DecisionReplay.Replayer(source: records, candidate: candidate, base: basePolicy)
        var pending: [UInt8] = []
        while true {
            let block = try input.read(upToCount: 1 << 20) ?? Data()
            pending.append(contentsOf: block)
            let consumed = pending.withUnsafeBytes { replayer.add(block: $0, final: block.isEmpty) }
            pending.removeFirst(consumed)
            if block.isEmpty { break }
        }
        let report = replayer.finish()
        let baseName = base.map { "\($0):\(policies)" }
        switch format {
        case .json: print(ReplayRenderer.json(report, candidate: policies, base: baseName).rendered(pretty: true))
        case .markdown: print(ReplayRenderer.markdown(report, candidate: policies, base: baseName))
        default: print(ReplayRenderer.text(report, candidate: policies, base: baseName))
        }
        switch failOn {
        case .allowToDeny?: if report.flips(FlipDirection.allowToDeny) > 0 { throw Exit.failingTests }
        case .any?: if report.totalFlips > 0 { throw Exit.failingTests }
        case nil: break
        }
    }
}
