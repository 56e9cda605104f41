import Foundation
import GatehouseTestSupport
import PolicyModel
import Testing

/// docs/cli.md lists every diagnostic code with its summary, generated from the `DiagnosticCode` registry.
@Suite struct DiagnosticCodeDocsTests {
    static let begin = "<!-- diagnostic-codes:begin -->\n"
    static let end = "<!-- diagnostic-codes:end -->"

    static var table: String {
        "| code | reports |\n| --- | --- |\n"
            + DiagnosticCode.allCases.map { "| `\($0.rawValue)` | \($0.summary) |\n" }.joined()
    }

    @Test func docsListEveryCodeWithItsSummary() throws {
        let url = Repository.url("docs/cli.md")
        let doc = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(doc.range(of: Self.begin)), stop = try #require(doc.range(of: Self.end))
        let generated = doc[..<start.upperBound] + Self.table + doc[stop.lowerBound...]
        #expect(String(generated) == (try Golden.expected(for: String(generated), at: url)),
                "run POLICY_UPDATE_GOLDEN=1 swift test --filter DiagnosticCodeDocsTests and review the diff")
    }

    @Test func everyCodeIsKebabCaseWithASummary() {
        for code in DiagnosticCode.allCases {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" }, "\(code.rawValue)")
            #expect(!code.summary.isEmpty && !code.summary.hasSuffix("."), "\(code.rawValue)")
        }
    }
}
