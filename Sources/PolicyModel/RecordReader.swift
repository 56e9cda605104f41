// A decision record's line (`policy serve --decision-log`, `GET /v1/operator/decisions` as NDJSON, `policy log pull`),
// read by the same strict byte reader as a request: the record's own fields by hand, its `request` object by the
// contract's reader, into a request value the caller reuses. `policy replay` reads a million of these, so no value
// tree and no `JSONDecoder` are built (docs/performance.md, "Recording decisions, and replaying them").
//
// Fields a record carries for people (`at`, `action`, `resourceType`) and fields a later server may add are
// stepped over (their JSON still checked); a field the replay needs is refused when missing, duplicated or of the
// wrong type, named as `request.subject.tier` is.

/// The fields of a decision record around its request.
public struct RecordEnvelope: Sendable, Hashable {
    /// The record's id in the store, when it has one.
    public var id: Int?
    /// The subject's keyed pseudonym; nil for a signed-out subject.
    public var subject: String?
    /// The recorded effect.
    public var effect: Effect
    /// The recorded reason.
    public var reason: Reason
    /// The content hash of the policy version that decided it.
    public var policyHash: String
}

extension RequestReader {
    /// Reads one record line: its envelope is returned and its request read into `request`, reusing that value's
    /// storage as `read(_:into:)` does. Throws naming the field at fault (`effect`, `request.resource.type`).
    public func readRecord(_ bytes: UnsafeRawBufferPointer, into request: inout Request) throws(RequestError) -> RecordEnvelope {
        if bytes.count <= limits.maxBytes { request.reset() }
        return try parseContiguous(bytes) { (parser: inout JSONRequestParser) throws(RequestError) in try parser.readRecord(into: &request) }
    }
}

extension JSONRequestParser {
    mutating func readRecord(into request: inout Request) throws(RequestError) -> RecordEnvelope {
        skipByteOrderMark()
        skipWhitespace()
        guard pos < count, base[pos] == UInt8(ascii: "{") else { throw wrongType("a record, a JSON object") }
        var id: Int?
        var subject: String?
        var effect: Effect?
        var reason: Reason?
        var policyHash: String?
        var hasRequest = false
        var seen: UInt8 = 0
        try forEachMember(depth: 1) { p, key throws(RequestError) in
            if p.isKey(key, "id") {
                try p.once(&seen, 1, key)
                id = try p.skipNull() ? nil : p.readInteger()
            } else if p.isKey(key, "subject") {
                try p.once(&seen, 2, key)
                subject = try p.readOptionalString()
            } else if p.isKey(key, "effect") {
                try p.once(&seen, 4, key)
                effect = try p.readCase(Effect.self) { "must be allow or deny, not '\($0)'" }
            } else if p.isKey(key, "reason") {
                try p.once(&seen, 8, key)
                reason = try p.readCase(Reason.self) { "is not a known reason: '\($0)'" }
            } else if p.isKey(key, "policyHash") {
                try p.once(&seen, 16, key)
                policyHash = try p.readString()
            } else if p.isKey(key, "request") {
                try p.once(&seen, 32, key)
                if try !p.skipNull() {
                    try p.readRequestObject(into: &request)
                    hasRequest = true
                }
            } else {
                try p.skipValue(depth: 2)
            }
        }
        skipWhitespace()
        guard pos == count else { throw syntax("unexpected \(describeByte()) after the record") }
        guard let effect else { throw RequestError(field: "effect", "is required", kind: .missingField, offset: pos - 1) }
        guard let reason else { throw RequestError(field: "reason", "is required", kind: .missingField, offset: pos - 1) }
        guard let policyHash else { throw RequestError(field: "policyHash", "is required", kind: .missingField, offset: pos - 1) }
        guard hasRequest else {
            throw RequestError(
                field: "request", "is absent (a record logged before v18, erased, or too large to keep)", kind: .missingField,
                offset: pos - 1)
        }
        return RecordEnvelope(id: id, subject: subject, effect: effect, reason: reason, policyHash: policyHash)
    }

    /// A string naming a case of `T`; another string is refused with `refusal`'s message, at the string.
    private mutating func readCase<T: RawRepresentable<String>>(_ type: T.Type, _ refusal: (String) -> String) throws(RequestError) -> T {
        let at = pos
        let text = try readString()
        guard let value = T(rawValue: text) else { throw RequestError(field: "", refusal(text), kind: .invalidValue, offset: at) }
        return value
    }
}
