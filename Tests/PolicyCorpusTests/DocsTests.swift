import Foundation
import Testing
import GatehouseTestSupport

/// The docs as a reader meets them: every relative link resolves to a file in the repository (and a `#heading`
/// to a heading of it), and no doc points outside the repository.
@Suite(.startsServers) struct DocsTests {
    static var documents: [URL] {
        let root = CLITests.root
        var files = ["README.md", "CHANGELOG.md"].map { root.appendingPathComponent($0) }
        for folder in ["docs", "examples", "Sources/Gatehouse/Gatehouse.docc", "Sources/GatehouseClient/GatehouseClient.docc"] {
            let walker = FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)
            files += (walker?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "md" && !$0.path.contains("/.build") }
        }
        return files.sorted { $0.path < $1.path }
    }

    /// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            if c == " " { return "-" }
            return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
        })
    }

    @Test func everyRelativeLinkResolves() throws {
        #expect(Self.documents.count >= 12)
        for document in Self.documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for match in text.matches(of: /\]\(([^)\s]+)\)/) {
                let target = String(match.output.1)
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") || target.hasPrefix("doc:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let file = parts[0].isEmpty ? document : document.deletingLastPathComponent().appendingPathComponent(parts[0]).standardizedFileURL
                #expect(FileManager.default.fileExists(atPath: file.path), "\(document.lastPathComponent): link '\(target)' names no file")
                #expect(file.path.hasPrefix(CLITests.root.standardizedFileURL.path), "\(document.lastPathComponent): link '\(target)' leaves the repository")
                if parts.count == 2, file.pathExtension == "md", let linked = try? String(contentsOf: file, encoding: .utf8) {
                    let anchors = Set(linked.split(separator: "\n").filter { $0.hasPrefix("#") }.map { Self.anchor($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)) })
                    #expect(anchors.contains(parts[1]), "\(document.lastPathComponent): link '\(target)' names no heading of \(file.lastPathComponent)")
                }
            }
        }
    }

    @Test func noDocNamesAFileOutsideTheRepository() throws {
        for document in Self.documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for outside in ["/work/", "../shared", "DESIGN.md", "STYLE.md", "/root/"] {
                #expect(!text.contains(outside), "\(document.lastPathComponent) names '\(outside)', which is not in the repository")
            }
        }
    }

    @Test func theExpressionDocUsesTheKeyTheCompilerReads() throws {
        let text = try String(contentsOf: CLITests.root.appendingPathComponent("docs/expressions.md"), encoding: .utf8)
        #expect(!text.contains("condition:"), "docs/expressions.md shows 'condition:', but rules read 'when:'")
        #expect(text.contains("when:"))
    }
}

/// The examples in docs/cli.md are run: each code block that starts with `$ policy ...` is executed from the
/// repository root and every line it shows must be a line of what the command prints now, in order (`...` in a
/// shown line stands for the rest of that line). A doc that drifts from the tool fails here.
@Suite(.startsServers) struct CLIDocExampleTests {
    struct Example: CustomStringConvertible {
        var line: Int
        var folder: String?
        var arguments: [String]
        var shown: [String]
        var description: String { "docs/cli.md:\(line): policy \(arguments.joined(separator: " "))" }
    }

    static var examples: [Example] {
        guard let text = try? String(contentsOf: CLITests.root.appendingPathComponent("docs/cli.md"), encoding: .utf8) else { return [] }
        var result: [Example] = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        while i < lines.count {
            // An optional `$ cd FOLDER` (from the repository root) before the command.
            let cd = i + 1 < lines.count && lines[i + 1].hasPrefix("$ cd ") ? String(lines[i + 1].dropFirst("$ cd ".count)) : nil
            let first = i + (cd == nil ? 1 : 2)
            if lines[i].hasPrefix("```"), first < lines.count, lines[first].hasPrefix("$ policy "), !lines[first].contains("|") {
                let command = String(lines[first].dropFirst("$ policy ".count))
                var shown: [String] = []
                var j = first + 1
                while j < lines.count, !lines[j].hasPrefix("```") {
                    shown.append(lines[j])
                    j += 1
                }
                result.append(Example(line: first + 1, folder: cd, arguments: command.split(separator: " ").map(String.init), shown: shown))
                i = j
            }
            i += 1
        }
        return result
    }

    @Test func thereAreExamplesToRun() { #expect(Self.examples.count >= 6) }

    @Test(arguments: examples)
    func theExamplePrintsWhatTheDocShows(_ example: Example) async throws {
        let folder = example.folder.map { CLITests.root.appendingPathComponent($0) } ?? CLITests.root
        let result = try await CLITests.run(example.arguments, in: folder)
        let printed = (result.out + result.err).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var next = 0
        for line in example.shown where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let prefix = line.components(separatedBy: "...").first ?? line
            guard let found = printed[next...].firstIndex(where: { line.contains("...") ? $0.hasPrefix(prefix) : $0 == line }) else {
                Issue.record("\(example): the doc shows a line the command does not print now:\n  \(line)\nit prints:\n\(printed.joined(separator: "\n"))")
                return
            }
            next = found + 1
        }
    }
}
