import PolicyModel

/// The text of one policy file, kept so diagnostics can quote the offending line.
public struct SourceFile: Sendable, Hashable {
    /// The path as the user named it (relative paths stay relative), used in every location.
    public let path: String
    public let text: String
    private let lineStarts: [String.Index]

    public init(path: String, text: String) {
        self.path = path
        self.text = text
        var starts = [text.startIndex]
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            i = text.index(after: i)
            if c == "\n" || c == "\r\n" { starts.append(i) }
        }
        lineStarts = starts
    }

    /// Line `n` (from 1) without its line break, or nil past the end.
    public func line(_ n: Int) -> String? {
        guard n >= 1, n <= lineStarts.count else { return nil }
        let start = lineStarts[n - 1]
        let end = n < lineStarts.count ? lineStarts[n] : text.endIndex
        var line = text[start..<end]
        while let last = line.last, last == "\n" || last == "\r" || last == "\r\n" { line = line.dropLast() }
        return String(line)
    }

    public func location(line: Int, column: Int) -> SourceLocation {
        SourceLocation(file: path, line: line, column: column)
    }
}
