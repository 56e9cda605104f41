import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide one request and print the trace of every check and rule considered.")

    @Option(help: "The policy set folder.")
    var policies: String

    @Option(help: "A file holding one request JSON (default: standard input).")
    var request: String?

    @Option(help: "Output format: text or json.")
    var format: OutputFormat = .text

    func run() throws {
        let policy = try loadOrExit(policies)
        let data = try request.map { path in
            guard let d = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read '\(path)'") }
            return d
        } ?? FileHandle.standardInput.readDataToEndOfFile()
        let parsed: Request
        do {
            parsed = try Request(json: String(decoding: data, as: UTF8.self))
        } catch {
            writeError("error: invalid request: \(error.description)")
            throw ExitCode(65)
        }
        let explanation = policy.explain(parsed)
        if format == .json {
            print(explanation.json.rendered(pretty: true))
            return
        }
        let d = explanation.decision
        print("\(d.effect.rawValue) (\(d.reason.rawValue))" + (d.message.map { ": \($0)" } ?? ""))
        if let location = d.policy { print("decided by \(location)") }
        for step in explanation.trace {
            print("  [\(step.outcome.rawValue)] \(step.check): \(step.detail)" + (step.location.map { "  (\($0))" } ?? ""))
        }
    }
}
