/// The bucket array `ActionTable` and `NameTable` share: open addressing with linear probing over hashes their
/// callers compute, each bucket the slot of one entry (-1 for empty).
///
/// The capacity is a power of two at least twice the entries, so a probe ends at an empty bucket; the hashes are
/// the policy's own names', fixed at compile time, and a request's names only probe.
struct ProbeTable: Sendable {
    private let mask: Int
    private let buckets: [Int32]

    /// Buckets for `entries` (a slot and its hash), `capacity` of them (`ProbeTable.capacity(for:minimum:)`).
    init(capacity: Int, entries: some Sequence<(slot: Int, hash: Int)>) {
        var buckets = [Int32](repeating: -1, count: capacity)
        for entry in entries {
            var i = entry.hash & (capacity - 1)
            while buckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            buckets[i] = Int32(entry.slot)
        }
        self.mask = capacity - 1
        self.buckets = buckets
    }

    /// The power of two, at least `minimum`, that holds `count` entries at most half full.
    static func capacity(for count: Int, minimum: Int) -> Int {
        var capacity = minimum
        while capacity < count * 2 { capacity <<= 1 }
        return capacity
    }

    /// The slot along `hash`'s probe sequence that `same` accepts, or `.absent` at the first empty bucket.
    @inline(__always)
    func probe(_ hash: Int, where same: (Int) -> Bool) -> ActionTable.Lookup {
        var i = hash & mask
        while true {
            let slot = Int(buckets[i])
            if slot < 0 { return .absent }
            if same(slot) { return .found(slot) }
            i = (i + 1) & mask
        }
    }
}
