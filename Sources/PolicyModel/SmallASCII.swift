/// Builds a `String` of at most 15 ASCII bytes directly in the small form the standard library gives such a string.
///
/// Swift keeps a string of at most 15 UTF-8 bytes inline in the `String` value (on 64-bit platforms): the bytes in
/// order, unused bytes zero, then the count in the low nibble of the last byte under the discriminator `0xE`
/// (immortal, small, ASCII). `String(decoding:as:)` arrives at exactly these two words, but first validates the
/// bytes as UTF-8 again and copies them through a generic path (~100 instructions for a short name); the request
/// reader has already validated them and knows they are ASCII. `SmallASCIITests` checks, for every length, that
/// the words are the standard library's own, and that the strings compare and hash as the ones it builds.
enum SmallASCII {
    /// The string of `count` bytes at `bytes`, which must all be ASCII; nil when `count` is more than 15 or the
    /// platform keeps strings in another layout (the caller then builds the string the ordinary way).
    @inline(__always)
    static func string(_ bytes: UnsafePointer<UInt8>, count: Int) -> String? {
        #if (arch(x86_64) || arch(arm64)) && _endian(little)
        guard count <= 15 else { return nil }
        let raw = UnsafeRawPointer(bytes)
        var low: UInt64
        var high: UInt64
        if count >= 8 {
            low = raw.loadUnaligned(as: UInt64.self)
            high = (raw + 8).partialWord(count: count - 8)
        } else {
            low = raw.partialWord(count: count)
            high = 0
        }
        high |= UInt64(0xE0 | count) << 56
        // Taken out of the two words with `move()`, not `unsafeBitCast`: a bit cast hands back a borrowed value, which
        // the caller then retained (`swift_bridgeObjectRetain`, ~14 instructions for a small string that has no
        // object to retain; ~6 per line of the JSON edge, issue 41).
        var words = (low, high)
        return withUnsafeMutablePointer(to: &words) { UnsafeMutableRawPointer($0).bindMemory(to: String.self, capacity: 1).move() }
        #else
        return nil
        #endif
    }
}

extension UnsafeRawPointer {
    /// The first `count` (0 to 7) bytes here as the low bytes of a word, read as 4 + 2 + 1 bytes so nothing past them
    /// is touched: the small strings' tail and the engine's name hash (`WordHasher`) read a name's last bytes this way.
    @inlinable @inline(__always)
    package func partialWord(count: Int) -> UInt64 {
        var word: UInt64 = 0
        var at = 0
        if count & 4 != 0 {
            word = UInt64(loadUnaligned(as: UInt32.self))
            at = 4
        }
        if count & 2 != 0 {
            word |= UInt64(loadUnaligned(fromByteOffset: at, as: UInt16.self)) << UInt64(at * 8)
            at += 2
        }
        if count & 1 != 0 { word |= UInt64(load(fromByteOffset: at, as: UInt8.self)) << UInt64(at * 8) }
        return word
    }
}
