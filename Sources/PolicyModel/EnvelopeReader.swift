// The server's two envelopes around the contract's request, read by the same strict byte reader as a single
// request: a batch (`{"requests": [...]}`) and a one-subject check (`{"subject", "resource", "actions", "context"}`).
//
// Everything `RequestReader` refuses in a request is refused here too, with the field path from the body's
// top (`requests[2].resource.type`, `actions[1]`) and the byte offset from the body's start. The envelope's own
// keys are strict as well: a duplicate, an unknown one, a missing one. Each batch item is read as it would be
// alone (its nesting counts from the item, not the envelope).

/// A one-subject check: the request shared by every action (its `action` empty) and the actions, in order.
public struct CheckEnvelope: Sendable, Hashable {
    /// Subject, resource and context; `action` is empty.
    public var request: Request
    /// The actions to decide, distinct, in the order given.
    public var actions: [String]

    /// A check of `actions` on `request`.
    public init(request: Request, actions: [String]) {
        self.request = request
        self.actions = actions
    }
}

extension RequestReader {
    /// Reads `{"requests": [item, ...]}`: each item is a request or the error that refused it, in order.
    ///
    /// An item the request reader refuses (a wrong type, an unknown or duplicate field, a bad timestamp) fails
    /// alone, named `requests[i].field`; the rest are read. A body that is not JSON at all (a syntax error
    /// anywhere, an item included), an envelope of another shape, or more than `maxItems` items throws.
    public func readBatch(_ bytes: some Collection<UInt8>, maxItems: Int) throws(RequestError) -> [Result<Request, RequestError>] {
        try parse(bytes) { (parser: inout JSONRequestParser) throws(RequestError) in try parser.readBatch(maxItems: maxItems) }
    }

    /// Reads `{"subject", "resource", "actions": [...], "context"}`: `resource` and a non-empty list of distinct
    /// action names (at most `maxActions`) are required, `subject` and `context` are the contract's.
    public func readCheck(_ bytes: some Collection<UInt8>, maxActions: Int) throws(RequestError) -> CheckEnvelope {
        try parse(bytes) { (parser: inout JSONRequestParser) throws(RequestError) in try parser.readCheck(maxActions: maxActions) }
    }
}

extension JSONRequestParser {
    mutating func readBatch(maxItems: Int) throws(RequestError) -> [Result<Request, RequestError>] {
        skipByteOrderMark()
        skipWhitespace()
        var items: [Result<Request, RequestError>]?
        try forEachMember(depth: 1) { p, key throws(RequestError) in
            if p.isKey(key, "requests") {
                guard items == nil else { throw p.duplicate(key) }
                items = try p.readBatchItems(maxItems: maxItems)
            } else {
                throw p.unknownField(key, allowed: ["requests"])
            }
        }
        guard let items else { throw RequestError(field: "requests", "is required", kind: .missingField, offset: pos - 1) }
        try endOfInput()
        return items
    }

    /// Refuses the element at `index` of an envelope's array when the array may hold only `limit` (`noun`).
    private func refuseElement(_ index: Int, beyond limit: Int, _ noun: String) throws(RequestError) {
        guard index < limit else { throw RequestError(field: "", "holds more than \(limit) \(noun)", kind: .invalidValue, offset: pos) }
    }

    /// The items of the batch's array; the cursor is on its `[`.
    private mutating func readBatchItems(maxItems: Int) throws(RequestError) -> [Result<Request, RequestError>] {
        guard pos < count, base[pos] == UInt8(ascii: "[") else { throw wrongType("an array of requests") }
        pos += 1
        var out: [Result<Request, RequestError>] = []
        var first = true
        while try nextElement(&first) {
            let index = out.count
            try refuseElement(index, beyond: maxItems, "requests")
            let start = pos
            var request = Request(action: "", resource: Resource(type: ""))
            do throws(RequestError) {
                try readRequestObject(into: &request)
                out.append(.success(request))
            } catch {
                // The item fails alone when it is still JSON: skip it from its start and go on.
                let fault = error
                pos = start
                do throws(RequestError) {
                    try skipValue(depth: 1)
                } catch {
                    throw (error.offset == fault.offset ? fault : error).inside("[\(index)]")
                }
                // Kept, not thrown: named from the body's top here, as a thrown error is by `readBatch`.
                out.append(.failure(fault.inside("[\(index)]").inside("requests")))
            }
        }
        return out
    }

    mutating func readCheck(maxActions: Int) throws(RequestError) -> CheckEnvelope {
        skipByteOrderMark()
        skipWhitespace()
        var request = Request(action: "", resource: Resource(type: ""))
        var actions: [String] = []
        try readRequestObject(into: &request, actions: &actions, maxActions: maxActions)
        try endOfInput()
        return CheckEnvelope(request: request, actions: actions)
    }

    /// A non-empty list of distinct action names; the cursor is on its `[`.
    mutating func readActions(maxActions: Int) throws(RequestError) -> [String] {
        let open = pos
        guard pos < count, base[pos] == UInt8(ascii: "[") else { throw wrongType("a non-empty array of action names") }
        try enter(depth: 2)
        pos += 1
        var actions: [String] = []
        var seen: Set<String> = []
        var first = true
        while try nextElement(&first) {
            let index = actions.count
            try refuseElement(index, beyond: maxActions, "actions")
            let at = pos
            do throws(RequestError) {
                let action = try readString()
                guard seen.insert(action).inserted else { throw RequestError(field: "", "repeats '\(action)'", kind: .invalidValue, offset: at) }
                actions.append(action)
            } catch {
                throw error.inside("[\(index)]")
            }
        }
        guard !actions.isEmpty else {
            throw RequestError(field: "", "must be a non-empty array of action names", kind: .invalidValue, offset: open)
        }
        return actions
    }

    /// Whitespace, then nothing: text after the envelope is a syntax error.
    private mutating func endOfInput() throws(RequestError) {
        skipWhitespace()
        guard pos == count else { throw syntax("unexpected \(describeByte()) after the body") }
    }

    /// Moves past one JSON value of any shape, checking its syntax, encoding and nesting (`depth` is the level a
    /// container at the cursor would have) but not its meaning: how a batch steps over an item it refused.
    mutating func skipValue(depth: Int) throws(RequestError) {
        guard pos < count else { throw syntax("expected a value, found the end of the input") }
        switch base[pos] {
        case UInt8(ascii: "\""):
            _ = try scanString()
        case UInt8(ascii: "{"):
            try enter(depth: depth)
            pos += 1
            var first = true
            while try nextMember(&first) != nil { try skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            try enter(depth: depth)
            pos += 1
            var first = true
            while try nextElement(&first) { try skipValue(depth: depth + 1) }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // A number too big for the reader is still JSON (the cursor is past it): the item fails alone.
            do throws(RequestError) {
                _ = try scanNumber()
            } catch where error.kind == .integerOverflow || error.kind == .numberOutOfRange {}
        default: throw syntax("expected a value, found \(describeByte())")
        }
    }
}
