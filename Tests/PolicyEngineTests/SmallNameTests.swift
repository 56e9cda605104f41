import PolicyModel
import Testing

@testable import PolicyEngine

/// `SmallName` reads a `String`'s two words; these pin the layout it relies on, so a toolchain that changed it
/// fails here rather than deciding differently (every fast path falls back to `==` when `SmallName` says nil).
@Suite struct SmallNameTests {
    @Test func shortASCIINamesAreSmallAndCompareByTheirWords() throws {
        let built = String(decoding: Array("project".utf8), as: UTF8.self)
        let joined = "pro" + "ject"
        let sliced = String("xproject".dropFirst())
        let names = try [built, joined, sliced, "project"].map { try #require(SmallName($0)) }
        #expect(Set(names).count == 1)
        #expect(SmallName("projecT") != names[0])
        #expect(SmallName("") != nil)
        #expect(SmallName("abcdefghijklmno") != nil)  // 15 bytes: the longest small string
    }

    @Test func anonymousIsTheWordsOfItsName() {
        #expect(SmallName(AuthMethod.anonymous) == SmallName.anonymous)
        #expect(SmallName("anonymouS") != SmallName.anonymous)
    }

    @Test func longOrNonASCIINamesAreNotSmall() {
        #expect(SmallName("abcdefghijklmnop") == nil)  // 16 bytes
        #expect(SmallName("café") == nil)
        #expect(SmallName("\u{212A}") == nil)  // the Kelvin sign, canonically equivalent to "K"
        #expect(SmallName.canonical("\u{212A}") == nil)
        #expect(SmallName.list(["K", "\u{212A}"]).allASCII == false)
    }

    @Test func equalAgreesWithStringEquality() {
        let names = ["", "a", "K", "\u{212A}", "e\u{301}", "\u{E9}", "editor", "editor ", "abcdefghijklmnop", "abcdefghijklmnoq"]
        for a in names {
            for b in names { #expect(SmallName.equal(a, b) == (a == b), "\(a) vs \(b)") }
        }
    }
}
