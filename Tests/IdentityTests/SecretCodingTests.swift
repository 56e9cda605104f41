import Foundation
import Testing

@testable import Identity

/// `SecretCoding.fromBase64URL`, decoded byte by byte since issue 26 (it runs on every bearer token), answers
/// exactly what the Foundation-based decoder it replaced answered: the same bytes, the same refusals.
@Suite struct SecretCodingTests {
    /// The decoder as it was: Foundation's base64 after swapping the alphabet, refusing non-canonical input.
    static func reference(_ text: String) -> Data? {
        guard text.count % 4 != 1 else { return nil }
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default: return nil
            }
        }
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        b64 += String(repeating: "=", count: (4 - b64.count % 4) % 4)
        guard let data = Data(base64Encoded: b64) else { return nil }
        guard SecretCoding.base64URL(data) == text else { return nil }
        return data
    }

    @Test func theByteDecoderAgreesWithTheFoundationOne() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let strays = Array("+/= .é\u{0}")
        for length in 0...48 {
            for _ in 0..<200 {
                var text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
                if length > 0, Int.random(in: 0..<10, using: &generator) == 0 {
                    var chars = Array(text)
                    chars[Int.random(in: 0..<length, using: &generator)] = strays.randomElement(using: &generator)!
                    text = String(chars)
                }
                #expect(SecretCoding.fromBase64URL(text) == Self.reference(text), "\(text)")
            }
        }
        // Every encoding of random bytes decodes back to them.
        for count in 0...40 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(SecretCoding.fromBase64URL(SecretCoding.base64URL(bytes)) == Data(bytes))
        }
    }
}
