import Foundation
import Testing

/// The docs as a reader meets them: every relative link resolves to a file in the repository (and a `#heading`
/// to a heading of it), and no doc points outside the repository.
@Suite struct DocsTests {
    static var documents: [URL] {
        let root = CLITests.root
        var files = ["README.md", "CHANGELOG.md"].map { root.appendingPathComponent($0) }
        for folder in ["docs", "examples", "Sources/Gatehouse/Gatehouse.docc"] {
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
