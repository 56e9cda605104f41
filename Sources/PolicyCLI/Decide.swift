import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

struct Decide: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide one request (JSON) or a stream of requests (JSON Lines).",
        discussion: """
            Reads one request JSON from --request FILE or standard input and prints one decision JSON.
            With --jsonl, reads one request per line from standard input and writes one decision per line,
            in order, flushed as soon as each line is read. A line that is not a valid request gets
            {"error": ..., "field": ...} on its line and the stream goes on; blank lines are skipped.
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
            streamDecisions(policy)
            return
        }
        let text: String
        if let path = request {
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read '\(path)'") }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        do {
            print(policy.decide(try Request(json: text)).json.rendered(pretty: true))
        } catch {
            writeError("error: invalid request: \(error.description)")
            throw ExitCode(65)
        }
    }
}

/// Answers each request line with one decision line, flushing after each so a co-process never waits.
func streamDecisions(_ policy: CompiledPolicy) {
    var lineNumber = 0
    while let line = readLine(strippingNewline: true) {
        lineNumber += 1
        if line.allSatisfy(\.isWhitespace) { continue }
        let output: JSONText
        do {
            output = policy.decide(try Request(json: line)).json
        } catch {
            var fields: [JSONText.Field] = [.init("error", .string(error.description))]
            if !error.field.isEmpty { fields.append(.init("field", .string(error.field))) }
            fields.append(.init("line", .int(lineNumber)))
            output = .object(fields)
        }
        // Unbuffered: the line reaches the reader before the next request is read.
        FileHandle.standardOutput.write(Data((output.rendered() + "\n").utf8))
    }
}
