/// A name held as a small ASCII `String`'s two words, compared and hashed as two integers.
///
/// Swift keeps a string of at most 15 UTF-8 bytes inline in the `String` value itself (on 64-bit platforms): the
/// bytes, then the count and a discriminator in the top byte, whose top nibble is `0xE` for an immortal small ASCII
/// string, with unused bytes zero. Two such strings are equal exactly when their words are: for ASCII, `==` is byte
/// equality. A string in any other form (longer, not ASCII, or a native buffer holding a short text) gives nil and
/// the caller compares with `==`, which also decides canonical equivalence, so a fast answer is never a different
/// answer. `SmallNameTests` pins the layout this relies on.
struct SmallName: Hashable, Sendable {
    let low: UInt64
    let high: UInt64

    @inline(__always)
    init?(_ string: String) {
        let words = unsafeBitCast(string, to: (UInt64, UInt64).self)
        guard words.1 >> 60 == 0xE else { return nil }
        low = words.0
        high = words.1
    }

    /// The small form of a policy's own name, however its `String` was built: nil when it is not ASCII or is longer
    /// than 15 bytes (a request's small name can then never equal it).
    static func canonical(_ name: String) -> SmallName? {
        SmallName(String(decoding: Array(name.utf8), as: UTF8.self))
    }

    /// `AuthMethod.anonymous` ("anonymous") as its two words, written out so reading it costs no global's lazy
    /// initialisation (`SmallNameTests` checks them against the string).
    static var anonymous: SmallName { SmallName(low: 0x756F_6D79_6E6F_6E61, high: 0xE900_0000_0000_0073) }

    /// Zero words: equal to no small name.
    static let none = SmallName(low: 0, high: 0)

    private init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// The small forms of `names` (`none` for a longer one) and whether every name is ASCII.
    static func list(_ names: [String]) -> (names: [SmallName], allASCII: Bool) {
        (names.map { canonical($0) ?? .none }, names.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } })
    }

    /// `a == b`, as two words each when both are small ASCII strings.
    @inline(__always)
    static func equal(_ a: String, _ b: String) -> Bool {
        if let x = SmallName(a), let y = SmallName(b) { return x == y }
        return a == b
    }

    @inline(__always)
    func mixed(into state: UInt64) -> UInt64 {
        var h = (state ^ low) &* 0x0000_0100_0000_01B3
        h = (h ^ high) &* 0x9E37_79B9_7F4A_7C15
        return h ^ (h >> 29)
    }
}
