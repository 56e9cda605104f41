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
        // A line starts after every LF byte: after "\n" and after "\r\n" (one Character), and Unicode always breaks
        // a grapheme after LF, so these are Character boundaries. Walking bytes avoids grapheme breaking.
        var starts = [text.startIndex]
        let utf8 = text.utf8
        var i = utf8.startIndex
        while i < utf8.endIndex {
            let byte = utf8[i]
            i = utf8.index(after: i)
            if byte == 0x0A { starts.append(i) }
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

extension SourceFile: SourceLines {}
