/// Resolves `(resource type, action)` to a slot: open addressing over a word-at-a-time multiplicative hash
/// of the names' UTF-8 bytes.
///
/// Only ASCII names take this path, where byte equality is String equality; anything else answers
/// `.notASCII` and the caller compares with `==` (canonical equivalence, as `Dictionary` does). The hash is
/// not keyed: the keys are the policy's own names, fixed at compile time, and a request's names only probe,
/// so a request cannot lengthen a probe chain.
struct ActionTable: Sendable {
    enum Lookup {
        case found(Int)
        case absent
        case notASCII
    }

    private let mask: Int
    /// Slot per bucket, -1 for empty.
    private let buckets: [Int32]
    private let hashes: [UInt64]
    private let types: [String]
    private let actions: [String]
    /// Every key is ASCII; otherwise the table is not used.
    private let usable: Bool
    var isUsable: Bool { usable }
    /// The pairs whose two names are small ASCII strings (`SmallName`), by their words: a request whose names are
    /// small too resolves here with no byte loop. Zero words for a pair with a longer name, which a small request
    /// name can never equal.
    private let smallBuckets: [Int32]
    private let smallTypes: [SmallName]
    private let smallActions: [SmallName]

    init(_ keys: [(type: String, action: String)]) {
        var capacity = 16
        while capacity < keys.count * 2 { capacity <<= 1 }
        var buckets = [Int32](repeating: -1, count: capacity)
        var hashes: [UInt64] = []
        hashes.reserveCapacity(keys.count)
        var usable = keys.count < Int(Int32.max)
        for (slot, key) in keys.enumerated() {
            guard let hash = Self.hash(type: key.type, action: key.action) else {
                usable = false
                break
            }
            hashes.append(hash)
            var i = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while buckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            buckets[i] = Int32(slot)
        }
        self.mask = capacity - 1
        self.buckets = buckets
        self.hashes = hashes
        self.types = keys.map(\.type)
        self.actions = keys.map(\.action)
        self.usable = usable
        var smallBuckets = [Int32](repeating: -1, count: capacity)
        var smallTypes: [SmallName] = []
        var smallActions: [SmallName] = []
        for (slot, key) in keys.enumerated() {
            guard usable, let type = SmallName.canonical(key.type), let action = SmallName.canonical(key.action) else {
                smallTypes.append(.none)
                smallActions.append(.none)
                continue
            }
            smallTypes.append(type)
            smallActions.append(action)
            var i = Self.smallHash(type, action) & (capacity - 1)
            while smallBuckets[i] >= 0 { i = (i + 1) & (capacity - 1) }
            smallBuckets[i] = Int32(slot)
        }
        self.smallBuckets = smallBuckets
        self.smallTypes = smallTypes
        self.smallActions = smallActions
    }

    @inline(__always)
    private static func smallHash(_ type: SmallName, _ action: SmallName) -> Int {
        Int(truncatingIfNeeded: action.mixed(into: type.mixed(into: 0x9E37_79B9_7F4A_7C15)))
    }

    @inline(__always)
    func lookup(type: String, action: String) -> Lookup {
        if usable, let smallType = SmallName(type), let smallAction = SmallName(action) {
            var i = Self.smallHash(smallType, smallAction) & mask
            while true {
                let slot = Int(smallBuckets[i])
                if slot < 0 { return .absent }
                if smallTypes[slot] == smallType, smallActions[slot] == smallAction { return .found(slot) }
                i = (i + 1) & mask
            }
        }
        guard usable, let hash = Self.hash(type: type, action: action) else { return .notASCII }
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = Int(buckets[i])
            if slot < 0 { return .absent }
            if hashes[slot] == hash, types[slot] == type, actions[slot] == action { return .found(slot) }
            i = (i + 1) & mask
        }
    }

    /// The hash of the pair, or nil when either name is not ASCII.
    @inline(__always)
    static func hash(type: String, action: String) -> UInt64? {
        var hasher = WordHasher()
        guard hasher.absorb(type), hasher.absorb(action) else { return nil }
        return hasher.finishIfASCII()
    }

    /// The slot of the pair given as UTF-8 bytes, for readers that have not built Strings.
    func lookup(type: UnsafeRawBufferPointer, action: UnsafeRawBufferPointer) -> Lookup {
        guard usable else { return .notASCII }
        var hasher = WordHasher()
        hasher.absorb(type)
        hasher.absorb(action)
        guard let hash = hasher.finishIfASCII() else { return .notASCII }
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = Int(buckets[i])
            if slot < 0 { return .absent }
            if hashes[slot] == hash, WordHasher.equal(types[slot], type), WordHasher.equal(actions[slot], action) { return .found(slot) }
            i = (i + 1) & mask
        }
    }
}
