import Foundation
import PolicyModel

/// A multiplicative hash over UTF-8 a word at a time, noting whether any byte was outside ASCII.
///
/// Not keyed: it hashes only the policy's own names, fixed at compile time; a request's names only probe.
struct WordHasher {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var bits: UInt64 = 0

    init() {}

    /// A hasher that starts from `seed` (a small name's words already mixed, `SmallName.mixed(into:)`).
    @inline(__always)
    init(seed: UInt64) { state = seed }

    /// Absorbs the string's UTF-8; false when the string has no contiguous UTF-8 (bridged), which callers treat as not ASCII.
    @inline(__always)
    mutating func absorb(_ text: String) -> Bool {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { absorb(UnsafeRawBufferPointer($0)) }
        return done != nil
    }

    @inline(__always)
    mutating func absorb(_ buffer: UnsafeRawBufferPointer) {
        let count = buffer.count
        var offset = 0
        if let base = buffer.baseAddress {
            while offset + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                bits |= word
                state = (state ^ word) &* 0x0000_0100_0000_01B3 &+ 0x2545_F491_4F6C_DD1D
                offset += 8
            }
        }
        // The last 0 to 7 bytes in one word, nothing past the end touched (the same bytes always give the same word,
        // whatever the byte order).
        var tail: UInt64 = 0
        if count > offset, let base = buffer.baseAddress { tail = (base + offset).partialWord(count: count - offset) }
        bits |= tail
        // The length closes each name, so ("ab", "c") and ("a", "bc") differ.
        state = (state ^ tail ^ (UInt64(count) << 56)) &* 0x0000_0100_0000_01B3 &+ 0x2545_F491_4F6C_DD1D
        state ^= state >> 29
    }

    /// The hash, or nil when some absorbed byte was not ASCII.
    @inline(__always)
    func finishIfASCII() -> UInt64? {
        guard bits & 0x8080_8080_8080_8080 == 0 else { return nil }
        var state = self.state
        state ^= state >> 33
        state = state &* 0xFF51_AFD7_ED55_8CCD
        state ^= state >> 33
        return state
    }

    /// Whether `name`'s UTF-8 is exactly `bytes`.
    @inline(__always)
    static func equal(_ name: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let same: Bool? = name.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, utf8.count) == 0)
        }
        return same ?? name.utf8.elementsEqual(bytes)
    }
}
