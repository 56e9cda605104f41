import Foundation
import PolicyModel
import Testing

/// A timestamp string that ends within eight bytes of the input's end is scanned with one last word loaded over
/// bytes already scanned (`JSONBytes.skipPlainToEnd`). Every such input must read exactly as the same input with
/// trailing whitespace, where the string is scanned the ordinary way: the same request, or the same error (kind,
/// field, message and offset).
@Suite struct RequestReaderTailTests {
    /// Spellings of a timestamp's bytes (between the quotes, without the closing one): valid, escaped, with a
    /// control character, not ASCII, not UTF-8.
    static let spellings: [[UInt8]] = [
        Array("2026-11-22T12:00:00Z".utf8),
        Array("2026-11-22T12:00:00.25Z".utf8),
        Array("2026-11-22T12:00:00+01:00".utf8),
        Array(#"2026-11-22T12:00:00\u005A"#.utf8),
        Array(#"2026-11-22T12:00:0\"Z"#.utf8),
        Array("2026-11-22T12:00:00\u{01}".utf8),
        Array("2026-11-22T12:00:00Zé".utf8),
        Array("2026-11-22T12:00:00".utf8) + [0xFF],
        Array("2026-11-22T12:00:00Z\\".utf8),
        Array("Z".utf8),
        Array("".utf8),
    ]

    /// What follows the timestamp's closing quote: the request's end, or an unterminated string.
    static let endings: [[UInt8]] = [Array(#""}}"#.utf8), Array(#""}"#.utf8), Array("}}".utf8), []]

    static func read(_ bytes: [UInt8]) -> Result<Request, RequestError> {
        do throws(RequestError) { return .success(try Request(json: bytes)) } catch { return .failure(error) }
    }

    @Test func aStringNearTheEndReadsAsWithTrailingWhitespace() {
        let heads = [
            Array(#"{"action":"view","resource":{"type":"app"},"context":{"now":""#.utf8),
            Array(#"{"action":"view","resource":{"type":"app"},"subject":{"auth":{"method":"pin","verifiedAt":""#.utf8),
        ]
        var compared = 0
        for head in heads {
            for spelling in Self.spellings {
                for ending in Self.endings {
                    let bytes = head + spelling + ending
                    let padded = bytes + Array(repeating: UInt8(ascii: " "), count: 16)
                    // Unterminated input: trailing spaces would become part of the string, so compare what the
                    // reader says about the string itself (kind and offset), not the whole text.
                    switch (Self.read(bytes), Self.read(padded)) {
                    case (.success(let a), .success(let b)):
                        #expect(a == b, "\(String(decoding: bytes, as: UTF8.self))")
                    case (.failure(let a), .failure(let b)):
                        // A fault found at the end of the input is reported at its end, which the padding moves.
                        let atEnd = a.offset == bytes.count && b.offset == padded.count
                        if a.kind != b.kind || a.field != b.field || (a.offset != b.offset && !atEnd) {
                            Issue.record("\(String(decoding: bytes, as: UTF8.self)): \(a.kind) \(a.field) \(a.offset ?? -1) vs \(b.kind) \(b.field) \(b.offset ?? -1)")
                        }
                    case (let a, let b):
                        Issue.record("\(String(decoding: bytes, as: UTF8.self)): \(a) vs \(b)")
                    }
                    compared += 1
                }
            }
        }
        #expect(compared == 2 * Self.spellings.count * Self.endings.count)
    }

    @Test func aTimestampEndingTheInputIsRead() throws {
        let request = try Request(json: #"{"action":"view","resource":{"type":"app"},"context":{"now":"2026-11-22T12:00:00Z"}}"#)
        #expect(request.context.now == Date(timeIntervalSince1970: 1_795_348_800))
    }
}
