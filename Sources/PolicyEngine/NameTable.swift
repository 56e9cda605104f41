/// Names to their positions, by the same word-at-a-time hash as `ActionTable`: the policy's tiers and roles.
///
/// ASCII names only, as for `ActionTable`: a name with any other byte answers `.notASCII`, and the caller
/// compares with `==` (canonical equivalence).
struct NameTable: Sendable {
    private let table: ProbeTable
    private let hashes: [UInt64]
    let names: [String]
    private let usable: Bool
    /// Every name is ASCII, and each as a `SmallName` (zero words when longer than 15 bytes).
    var isASCII: Bool { usable }
    let smallNames: [SmallName]

    init(_ names: [String]) {
        var hashes: [UInt64] = []
        var usable = names.count < Int(Int32.max)
        for name in names {
            var hasher = WordHasher()
            guard hasher.absorb(name), let hash = hasher.finishIfASCII() else {
                usable = false
                break
            }
            hashes.append(hash)
        }
        self.table = ProbeTable(
            capacity: ProbeTable.capacity(for: names.count, minimum: 8),
            entries: hashes.enumerated().lazy.map { (slot: $0.offset, hash: Int(truncatingIfNeeded: $0.element)) })
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
        table.probe(Int(truncatingIfNeeded: hash)) { hashes[$0] == hash && same($0) }
    }
}
