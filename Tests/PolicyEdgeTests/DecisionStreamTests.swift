import Foundation
import PolicyEdge
import PolicyEngine
import PolicyModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct DecisionStreamTests {
    static func answer(_ text: String, policy: CompiledPolicy = Shipped.researchCrawler, final: Bool = true, limits: RequestLimits = .standard)
        -> (output: String, consumed: Int)
    {
        var stream = DecisionStream(policy: policy, limits: limits)
        var out: [UInt8] = []
        let consumed = Array(text.utf8).withUnsafeBytes { stream.answer($0, into: &out, final: final) }
        return (String(decoding: out, as: UTF8.self), consumed)
    }

    @Test func answersEveryShippedTestRequestWithTodaysDecisionBytes() {
        for (policy, requests) in Shipped.sets {
            let input = requests.map { $0.json.rendered() + "\n" }.joined()
            let expected = requests.map { policy.decide($0).json.rendered() + "\n" }.joined()
            let (output, consumed) = Self.answer(input, policy: policy, final: false)
            #expect(output == expected)
            #expect(consumed == input.utf8.count)
        }
    }

    @Test func keepsAPartialLineForTheNextBlock() {
        let line = #"{"action":"x","resource":{"type":"app"}}"#
        let (output, consumed) = Self.answer(line + "\n" + line.prefix(10), final: false)
        #expect(output.split(separator: "\n").count == 1)
        #expect(consumed == line.utf8.count + 1)
        // At the end of input the last line is answered without its newline.
        #expect(Self.answer(line).output.hasPrefix(#"{"decision":"deny","reason":"default_deny""#))
    }

    @Test func badLinesGetAnErrorWithFieldOffsetAndLineAndTheStreamGoesOn() {
        let input = """
            {"action":"x","resource":{"type":"app","usage":{"sources":-1}}}

            not json
            {"action":"browse","action":"checkout","resource":{"type":"app"}}
            {"action":"view","resource":{"type":"project","ownerId":"alice"}}

            """
        let lines = Self.answer(input).output.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        // The error item of a /v1/decide/batch answer, plus the line number.
        #expect(lines[0] == #"{"error":{"code":"invalid_request","field":"resource.usage.sources","kind":"negative_count","detail":"a usage count cannot be negative, found -1","offset":58},"line":1}"#)
        #expect(lines[1] == #"{"error":{"code":"invalid_json","kind":"syntax","detail":"invalid JSON: expected an object, found 'n'","offset":0},"line":3}"#)
        #expect(lines[2] == #"{"error":{"code":"invalid_json","field":"action","kind":"duplicate_key","detail":"duplicate key 'action'","offset":19},"line":4}"#)
        #expect(lines[3].hasPrefix(#"{"decision":"deny","reason":"unauthenticated""#))
    }

    @Test func anOverlongLineIsRefusedWithoutBufferingItAndTheNextLineIsAnswered() {
        let limits = RequestLimits(maxBytes: 100)
        var stream = DecisionStream(policy: Shipped.researchCrawler, limits: limits)
        var out: [UInt8] = []
        // 150 bytes of one line with no newline yet: refused now, consumed whole.
        let head = Array(#"{"action":"x","resource":{"type":"app","id":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 104)
        #expect(head.withUnsafeBytes { stream.answer($0, into: &out) } == head.count)
        #expect(String(decoding: out, as: UTF8.self).contains(#""offset":100},"line":1}"#))
        // Its tail is skipped; the line after it is line 2.
        out.removeAll()
        let tail = Array("aaaa\"}}\n{\"action\":\"x\",\"resource\":{\"type\":\"app\"}}\n".utf8)
        #expect(tail.withUnsafeBytes { stream.answer($0, into: &out) } == tail.count)
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix(#"{"decision":"deny","reason":"default_deny""#))
        #expect(stream.lineNumber == 2)
    }

    @Test func runReadsBlocksFromAFileAndWritesEveryAnswer() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let (policy, requests) = Shipped.sets[0]
        // Many lines, so block boundaries fall inside lines; a small block size makes that certain.
        let lines = (0..<2000).map { requests[$0 % requests.count].json.rendered() }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: dir.appendingPathComponent("in"))
        let input = open(dir.appendingPathComponent("in").path, O_RDONLY)
        let output = open(dir.appendingPathComponent("out").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var stream = DecisionStream(policy: policy)
        #expect(stream.run(input: input, output: output, blockSize: 1000) == nil)
        close(input)
        close(output)
        let written = try String(contentsOf: dir.appendingPathComponent("out"), encoding: .utf8)
        #expect(written == (0..<2000).map { policy.decide(requests[$0 % requests.count]).json.rendered() + "\n" }.joined())
    }
}
