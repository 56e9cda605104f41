import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEdge
import PolicyEngine
import PolicyModel

struct Decide: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide one request (JSON) or a stream of requests (JSON Lines).",
        discussion: """
            Reads one request JSON from --request FILE or standard input and prints one decision JSON. With \
            --jsonl, reads one request per line from standard input and writes one decision per line, in order: \
            input is read in blocks and the answers to a block's lines are written at once, so a lone line is \
            answered as soon as it arrives. A line that is not a valid request gets {"error": {"code", "field", \
            "kind", "detail", "offset"}, "line": N} on its line (a /v1/decide/batch error item) and the stream \
            goes on; blank lines are skipped. A request (line or file) may be at most 1 MiB.
            """)

    @Option(help: "The policy set folder.")
    var policies: String

    @Option(help: "A file holding one request JSON (default: standard input).")
    var request: String?

    @Flag(help: "Read JSON Lines from standard input; write one decision per line.")
    var jsonl = false

    func run() throws {
        let policy = try loadOrExit(policies)
        if jsonl {
            if request != nil { throw ValidationError("--jsonl reads standard input; do not combine it with --request") }
            try streamDecisions(policy)
            return
        }
        let data: Data
        if let path = request {
            guard let contents = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read '\(path)'") }
            data = contents
        } else {
            data = FileHandle.standardInput.readDataToEndOfFile()
        }
        do {
            print(policy.decide(try Request(json: data)).json.rendered(pretty: true))
        } catch {
            writeError("error: invalid request: \(error.description)")
            throw ExitCode(65)
        }
    }
}

/// Answers each request line with one decision line (`PolicyEdge.DecisionStream`: block reads, one write per block).
func streamDecisions(_ policy: CompiledPolicy) throws {
    var stream = DecisionStream(policy: policy)
    if let failure = stream.run(input: 0, output: 1) {
        writeError("error: \(String(cString: strerror(failure)))")
        throw ExitCode(74)  // EX_IOERR
    }
}
