import Foundation
import PolicyServer
import Testing
import GatehouseTestSupport

/// `policy serve`'s options are declared where ArgumentParser reads them (Serve.swift), carried in
/// `ServerSettings.Options`, and backed by `ServerSettings.Variable`: these tests make the three one statement in
/// effect, so an option added to one place and not the others fails here.
@Suite struct ServeOptionTableTests {
    /// The long options `policy serve --help` lists, besides `--help` and `--version`.
    static func helpOptions() async throws -> Set<String> {
        let text = try await Program(ServedProcess.binary, ["serve", "--help"]).run().standardOutput
        let options = text.split(whereSeparator: \.isWhitespace).compactMap { word -> String? in
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: ",.;:()[]<>"))
            guard trimmed.hasPrefix("--"), trimmed.count > 2, trimmed.dropFirst(2).allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }),
                trimmed.dropFirst(2).first?.isLetter == true
            else { return nil }
            return trimmed
        }
        return Set(options).subtracting(["--help", "--version"])
    }

    @Test func theCommandsOptionsAreTheVariableTables() async throws {
        let table = Set(ServerSettings.Variable.allCases.compactMap(\.option))
        let listed = try await Self.helpOptions()
        #expect(table.subtracting(listed).sorted() == [], "in ServerSettings.Variable but not an option of policy serve")
        #expect(listed.subtracting(table).sorted() == [], "an option of policy serve without a GATEHOUSE_* variable in ServerSettings.Variable")
    }

    @Test func optionsCarriesOneFieldPerOption() {
        let fields = Mirror(reflecting: ServerSettings.Options()).children.count
        #expect(fields == ServerSettings.Variable.allCases.compactMap(\.option).count)
    }

    /// Every variable and option is documented where operators look (docs/server.md or docs/deploy.md).
    @Test func everyOptionAndVariableIsDocumented() throws {
        let docs = try ["docs/server.md", "docs/deploy.md"].map {
            try String(contentsOf: TestServer.root.appendingPathComponent($0), encoding: .utf8)
        }.joined()
        for variable in ServerSettings.Variable.allCases {
            #expect(docs.contains(variable.rawValue), "\(variable.rawValue) is not documented")
            if let option = variable.option { #expect(docs.contains(option), "\(option) is not documented") }
        }
    }
}
