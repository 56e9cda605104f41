import PolicyModel
import Testing

/// The request reader builds short ASCII strings straight in the standard library's small form (`SmallASCII`):
/// these pin that the words are the ones `String(decoding:as:)` gives, for every length, so a toolchain that
/// changed the layout fails here rather than reading requests differently.
@Suite struct SmallASCIITests {
    /// Every printable ASCII byte but the quote and the backslash (which a JSON string escapes).
    static let alphabet: [UInt8] = Array(0x20...0x7E).filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }

    static func words(_ string: String) -> (UInt64, UInt64) { unsafeBitCast(string, to: (UInt64, UInt64).self) }

    @Test func readerStringsAreTheStandardLibrarysSmallStrings() throws {
        for length in 0...20 {
            for shift in [0, 17, 45, 80] {
                let bytes = (0..<length).map { Self.alphabet[($0 * 7 + shift) % Self.alphabet.count] }
                let expected = String(decoding: bytes, as: UTF8.self)
                let quoted = String(decoding: bytes, as: UTF8.self)
                let json = "{\"subject\":{\"id\":\"\(quoted)\",\"tier\":\"\(quoted)\",\"roles\":[\"\(quoted)\"]},"
                    + "\"action\":\"\(quoted)\",\"resource\":{\"type\":\"t\",\"members\":{\"\(quoted)\":\"\(quoted)\"},\"usage\":{\"\(quoted)\":1}}}"
                let request = try Request(json: json)
                let read = [request.subject.id!, request.subject.tier!, request.subject.roles[0], request.action]
                    + Array(request.resource.members.keys) + Array(request.resource.members.values) + Array(request.resource.usage.keys)
                for string in read {
                    #expect(string == expected)
                    #expect(string.hashValue == expected.hashValue)
                    #expect(Array(string.utf8) == bytes)
                    #expect(string.count == length)
                    if length <= 15 {
                        #expect(Self.words(string) == Self.words(expected), "length \(length): \(string)")
                    }
                }
                #expect(request.resource.members[expected] == expected)
                #expect(request.resource.usage[expected] == 1)
                // Appending to one keeps it a valid string of the same text.
                var grown = request.subject.id!
                grown += "é"
                #expect(grown == expected + "é")
            }
        }
    }

    @Test func nonASCIIAndEscapedStringsTakeTheOrdinaryPath() throws {
        let request = try Request(json: #"{"subject":{"id":"Zoë","tier":"p\u0072o"},"action":"a","resource":{"type":"t"}}"#)
        #expect(request.subject.id == "Zoë")
        #expect(request.subject.tier == "pro")
        #expect(Self.words(request.subject.tier!) == Self.words(String(decoding: Array("pro".utf8), as: UTF8.self)))
    }
}
