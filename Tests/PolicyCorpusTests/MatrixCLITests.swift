import Foundation
import Testing
import GatehouseTestSupport

/// `policy matrix --format json` as a script uses it: every cell's request, replayed through `policy decide`,
/// gets the cell's decision.
@Suite(.startsServers) struct MatrixCLITests {
    @Test(arguments: ["research-crawler", "mimisupply", "contacasal"])
    func everyCellReplaysThroughDecide(_ name: String) async throws {
        let set = "policies/\(name)"
        let matrix = try await CLITests.run(["matrix", set, "--format", "json"])
        #expect(matrix.status == 0, "\(matrix.err)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(matrix.out.utf8)) as? [String: Any])
        let tables = try #require(document["tables"] as? [[String: Any]])
        let cells = tables.flatMap { ($0["cells"] as? [[String: Any]]) ?? [] }
        #expect(!cells.isEmpty)
        let requests = try cells.map { cell in
            String(decoding: try JSONSerialization.data(withJSONObject: try #require(cell["request"]), options: [.sortedKeys]), as: UTF8.self)
        }
        let replay = try await CLITests.run(["decide", "--policies", set, "--jsonl"], input: requests.joined(separator: "\n") + "\n")
        #expect(replay.status == 0, "\(replay.err)")
        let decisions = replay.out.split(separator: "\n")
        #expect(decisions.count == cells.count)
        for (cell, line) in zip(cells, decisions) {
            let decided = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary
            #expect(decided == (cell["decision"] as? NSDictionary), "\(cell["row"] ?? "") \(cell["action"] ?? "")")
        }
    }
}
