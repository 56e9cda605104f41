/// Text made safe inside XML or HTML markup: the JUnit report, the decision matrix page and the server's playground
/// write every value through it.
public enum MarkupText {
    /// Escapes text for XML 1.0 content or a double-quoted attribute.
    ///
    /// Characters XML 1.0 cannot carry at all (C0 controls other than tab, newline and carriage return, and
    /// U+FFFE/U+FFFF) become the visible text `\u{XX}`; in attributes, tab, newline and carriage return are written
    /// as character references so attribute-value normalization keeps them.
    public static func escape(_ text: String, inAttribute: Bool = false) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where inAttribute: out += "&quot;"
            case "\n" where inAttribute: out += "&#10;"
            case "\t" where inAttribute: out += "&#9;"
            case "\r": out += "&#13;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            case let c where c.value < 0x20 || c.value == 0xFFFE || c.value == 0xFFFF:
                out += "\\u{" + String(c.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
