import Foundation
import Testing
import GatehouseTestSupport

/// `policy decide --jsonl` driven as a co-process: a line written is answered before standard input closes.
@Suite(.startsServers) struct CoProcessTests {
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("policy").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("policy")
    }

    @Test func aLoneLineIsAnsweredBeforeStandardInputCloses() async throws {
        let process = try await Program(
            Self.binary, ["decide", "--policies", Shipped.root.appendingPathComponent("policies/research-crawler").path, "--jsonl"]
        ).start(acceptingInput: true)
        defer { process.kill() }
        for (line, expected) in [
            (#"{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":3}}}"#, #"{"decision":"allow","reason":"allowed","limit":50,"used":3,"remaining":47"#),
            (#"{"action":"x"}"#, #"{"error":{"code":"invalid_request","field":"resource","kind":"missing_field","detail":"is required""#),
        ] {
            try await process.write(line + "\n")
            // Standard input stays open: the answer must come anyway (30 s bounds a slow debug start).
            let answer = try? await process.nextLine(within: .seconds(30))
            #expect(answer?.hasPrefix(expected) == true, "\(answer ?? "no answer within 30 s")")
        }
        try await process.closeInput()
        let ended = await process.wait(within: .seconds(60))
        #expect(ended?.status == 0)
    }
}
