/// Names to their positions, by the same word-at-a-time hash as `ActionTable`: the policy's tiers and roles.
///
/// ASCII names only, as for `ActionTable`: a name with any other byte answers `.notASCII`, and the caller
/// compares with `==` (canonical equivalence).
struct NameTable: Sendable {
    private let mask: Int
    private let buckets: [Int32]
    private let hashes: [UInt64]
    let names: [String]
    private let usable: Bool
    /// Every name is ASCII, and each as a `SmallName` (zero words when longer than 15 bytes).
    var isASCII: Bool { usable }
    let smallNames: [SmallName]

    init(_ names: [String]) {
        var capacity = 8
        while capacity < names.count * 2 { capacity <<= 1 }
        var buckets = [Int32](repeating: -1, count: capacity)
        var hashes: [UInt64] = []
        var usable = names.count < Int(Int32.max)
        for (index, name) in names.enumerated() {
            var hasher = WordHasher()
            guard hasher.absorb(name), let hash = hasher.finishIfASCII() else {
                usable = false
                break
            }
            hashes.append(hash)
            var i = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while buckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            buckets[i] = Int32(index)
        }
        self.mask = capacity - 1
        self.buckets = buckets
        self.hashes = hashes
        self.names = names
        self.usable = usable
        self.smallNames = SmallName.list(names).names
    }

    /// The position of `name`; `.notASCII` when the name or any name of the table is not ASCII.
    @inline(__always)
    func lookup(_ name: String) -> ActionTable.Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        guard hasher.absorb(name), let hash = hasher.finishIfASCII() else { return .notASCII }
        return probe(hash) { names[$0] == name }
    }

    /// The position of the name given as UTF-8 bytes.
    @inline(__always)
    func lookup(utf8 name: UnsafeRawBufferPointer) -> ActionTable.Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        hasher.absorb(name)
        guard let hash = hasher.finishIfASCII() else { return .notASCII }
        return probe(hash) { WordHasher.equal(names[$0], name) }
    }

    /// The position of `name`, comparing by canonical equivalence whatever the bytes.
    func index(of name: String) -> Int? {
        switch lookup(name) {
        case .found(let index): return index
        case .absent: return nil
        case .notASCII: return names.firstIndex(of: name)
        }
    }

    /// The position of the name given as UTF-8 bytes, by canonical equivalence when it is not ASCII.
    func index(utf8 name: UnsafeRawBufferPointer) -> Int? {
        switch lookup(utf8: name) {
        case .found(let index): return index
        case .absent: return nil
        case .notASCII: return index(of: String(decoding: name, as: UTF8.self))
        }
    }

    @inline(__always)
    private func probe(_ hash: UInt64, _ same: (Int) -> Bool) -> ActionTable.Lookup {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let index = Int(buckets[i])
            if index < 0 { return .absent }
            if hashes[index] == hash, same(index) { return .found(index) }
            i = (i + 1) & mask
        }
    }
}
