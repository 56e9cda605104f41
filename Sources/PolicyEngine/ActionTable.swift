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

    /// The pairs by the hash of their bytes.
    private let table: ProbeTable
    private let hashes: [UInt64]
    private let types: [String]
    private let actions: [String]
    /// Every key is ASCII; otherwise the table is not used.
    private let usable: Bool
    var isUsable: Bool { usable }
    /// The pairs whose two names are small ASCII strings (`SmallName`), by their words: a request whose names are
    /// small too resolves here with no byte loop. Zero words for a pair with a longer name, which a small request
    /// name can never equal.
    private let smallTable: ProbeTable
    private let smallTypes: [SmallName]
    private let smallActions: [SmallName]
    /// The pairs whose type is a small ASCII string and whose action is not (longer than 15 bytes), by the type's
    /// words mixed and the action's bytes hashed after them (`longActionKey`): such a request (mimisupply's
    /// `partner_management`) spares hashing its type byte by byte (issue 41, round six). Zero for the other pairs.
    private let longActionTable: ProbeTable
    private let longActionHashes: [UInt64]
    /// Each such action's bytes as `LongWords` (none outside 16 to 24 bytes): a request's action of 16 to 24 bytes is
    /// compared as four integers, not through `String`'s forms and `memcmp`.
    private let longActionWords: [LongWords]

    init(_ keys: [(type: String, action: String)]) {
        let capacity = ProbeTable.capacity(for: keys.count, minimum: 16)
        var hashes: [UInt64] = []
        hashes.reserveCapacity(keys.count)
        var usable = keys.count < Int(Int32.max)
        for key in keys {
            guard let hash = Self.hash(type: key.type, action: key.action) else {
                usable = false
                break
            }
            hashes.append(hash)
        }
        self.table = ProbeTable(
            capacity: capacity, entries: hashes.enumerated().lazy.map { (slot: $0.offset, hash: Int(truncatingIfNeeded: $0.element)) })
        self.hashes = hashes
        self.types = keys.map(\.type)
        self.actions = keys.map(\.action)
        self.usable = usable
        var small: [(slot: Int, hash: Int)] = []
        var smallTypes: [SmallName] = []
        var smallActions: [SmallName] = []
        var longAction: [(slot: Int, hash: Int)] = []
        var longActionHashes = [UInt64](repeating: 0, count: keys.count)
        for (slot, key) in keys.enumerated() {
            guard usable, let type = SmallName.canonical(key.type), let action = SmallName.canonical(key.action) else {
                if usable, let type = SmallName.canonical(key.type), let hash = Self.longActionKey(type, key.action)?.hash {
                    longActionHashes[slot] = hash
                    longAction.append((slot, Int(truncatingIfNeeded: hash)))
                    smallTypes.append(type)
                } else {
                    smallTypes.append(.none)
                }
                smallActions.append(.none)
                continue
            }
            smallTypes.append(type)
            smallActions.append(action)
            small.append((slot, Self.smallHash(type, action)))
        }
        self.smallTable = ProbeTable(capacity: capacity, entries: small)
        self.smallTypes = smallTypes
        self.smallActions = smallActions
        self.longActionTable = ProbeTable(capacity: capacity, entries: longAction)
        self.longActionHashes = longActionHashes
        self.longActionWords = keys.map { key in Array(key.action.utf8).withUnsafeBytes { LongWords($0) } }
    }

    /// A pair's hash starts from its small type's words: both tables' keys (`smallHash`, `longActionKey`) share it.
    @inline(__always)
    private static func typeSeed(_ type: SmallName) -> UInt64 { type.mixed(into: 0x9E37_79B9_7F4A_7C15) }

    @inline(__always)
    private static func smallHash(_ type: SmallName, _ action: SmallName) -> Int {
        Int(truncatingIfNeeded: action.mixed(into: typeSeed(type)))
    }

    /// The hash of a pair whose type is small (the type's words mixed, then the action) and the action's `LongWords`,
    /// read in one pass over its bytes; nil when the action is not ASCII or has no contiguous UTF-8. An action of 16 to
    /// 24 bytes is hashed from its words, any other by `WordHasher`.
    @inline(__always)
    private static func longActionKey(_ type: SmallName, _ action: String) -> (hash: UInt64, words: LongWords)? {
        let seed = typeSeed(type)
        let key: (hash: UInt64, words: LongWords)?? = action.utf8.withContiguousStorageIfAvailable { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            let words = LongWords(bytes)
            if words.count != 0 {
                guard (words.first | words.second | words.last) & 0x8080_8080_8080_8080 == 0 else { return nil }
                return (words.hash(seed), words)
            }
            var hasher = WordHasher(seed: seed)
            hasher.absorb(bytes)
            return hasher.finishIfASCII().map { ($0, words) }
        }
        return key ?? nil
    }

    @inline(__always)
    func lookup(type: String, action: String) -> Lookup {
        if usable, let smallType = SmallName(type) {
            if let smallAction = SmallName(action) {
                return smallTable.probe(Self.smallHash(smallType, smallAction)) { smallTypes[$0] == smallType && smallActions[$0] == smallAction }
            }
            guard let key = Self.longActionKey(smallType, action) else { return .notASCII }
            let found = longActionTable.probe(Int(truncatingIfNeeded: key.hash)) {
                longActionHashes[$0] == key.hash && smallTypes[$0] == smallType
                    && (key.words.count != 0 ? longActionWords[$0] == key.words : Self.asciiEqual(actions[$0], action))
            }
            if case .found = found { return found }
            // A short action held in a native buffer rather than as a small string is only in the table below.
        }
        guard usable, let hash = Self.hash(type: type, action: action) else { return .notASCII }
        return table.probe(Int(truncatingIfNeeded: hash)) { hashes[$0] == hash && types[$0] == type && Self.asciiEqual(actions[$0], action) }
    }

    /// `name == other` for two ASCII names (the table's, all ASCII when it is usable, and a request's whose hash proved
    /// it ASCII), where equal bytes are equal Strings: a name longer than 15 bytes is compared by `memcmp` instead of
    /// the standard library's compare (issue 41); a shorter one is a small string, compared as two words by `==`.
    @inline(__always)
    private static func asciiEqual(_ name: String, _ other: String) -> Bool {
        guard name.utf8.count > 15 else { return name == other }
        let same: Bool? = other.utf8.withContiguousStorageIfAvailable { WordHasher.equal(name, UnsafeRawBufferPointer($0)) }
        return same ?? (name == other)
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
        return table.probe(Int(truncatingIfNeeded: hash)) {
            hashes[$0] == hash && WordHasher.equal(types[$0], type) && WordHasher.equal(actions[$0], action)
        }
    }
}

/// A name of 16 to 24 bytes as its length and three words that together cover every byte (the first eight, the next
/// eight, the last eight, overlapping): two such are equal exactly when the names' bytes are. `none` (length 0) for
/// any other length.
struct LongWords: Equatable {
    let count: Int
    let first: UInt64
    let second: UInt64
    let last: UInt64

    static let none = LongWords(count: 0, first: 0, second: 0, last: 0)

    private init(count: Int, first: UInt64, second: UInt64, last: UInt64) {
        self.count = count
        self.first = first
        self.second = second
        self.last = last
    }

    /// The words mixed into `seed` (a small type's), the length closing them.
    @inline(__always)
    func hash(_ seed: UInt64) -> UInt64 {
        var h = (seed ^ first) &* 0x0000_0100_0000_01B3
        h = (h ^ second) &* 0x9E37_79B9_7F4A_7C15
        h = (h ^ last ^ (UInt64(count) << 56)) &* 0x0000_0100_0000_01B3
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        return h ^ (h >> 33)
    }

    @inline(__always)
    init(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 16, bytes.count <= 24, let base = bytes.baseAddress else {
            self = .none
            return
        }
        count = bytes.count
        first = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
        second = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        last = base.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)
    }
}
