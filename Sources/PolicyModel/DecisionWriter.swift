/// Writes decisions as the contract's compact JSON into a byte buffer, with no Foundation and no allocation
/// beyond the buffer's own growth.
///
/// The bytes are exactly `decision.json.rendered()`'s (tested): fields in contract order, absent fields left
/// out, strings escaped the same way.
public enum DecisionWriter {
    /// Appends `decision` as one line of compact JSON, without the newline.
    ///
    /// The message, tier to upgrade to and location come pre-rendered with the decision's shared text
    /// (`DecisionText.json`, written by `appendText` when the text was built), so a decision is a handful of copies.
    @inlinable
    public static func append(_ decision: Decision, to out: inout [UInt8]) {
        appendHead(effect: decision.effect, reason: decision.reason, to: &out)
        appendRest(
            text: decision.text, figures: decision.figures, limit: decision.limitValue, used: decision.usedValue,
            remaining: decision.remainingValue, to: &out)
    }

    /// `append` after the head: the text and the limit figures, given as parts, and not inlined. Inlined, or given the
    /// decision itself, the optimiser kept the text alive by copying the whole decision (an outlined copy through its
    /// value witness, retaining the text) and destroying the copy, on every line (~100 instructions a line of the
    /// JSON edge, issue 41, seventh round).
    @usableFromInline @inline(never)
    static func appendRest(text: DecisionText?, figures: UInt8, limit: Int, used: Int, remaining: Int, to out: inout [UInt8]) {
        guard let text else {
            appendFigures(figures, limit: limit, used: used, remaining: remaining, to: &out)
            out.append(UInt8(ascii: "}"))
            return
        }
        if figures == 0 {
            // No limit figures between the two parts: one copy.
            out.append(contentsOf: text.json)
        } else {
            text.json.withUnsafeBufferPointer { json in
                out.append(contentsOf: UnsafeBufferPointer(rebasing: json[..<text.jsonSplit]))
                appendFigures(figures, limit: limit, used: used, remaining: remaining, to: &out)
                out.append(contentsOf: UnsafeBufferPointer(rebasing: json[text.jsonSplit...]))
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `,"limit":…,"used":…,"remaining":…`, those present (`figures`: bits 0, 1, 2, as `Decision` keeps them).
    @inlinable @inline(__always)
    static func appendFigures(_ figures: UInt8, limit: Int, used: Int, remaining: Int, to out: inout [UInt8]) {
        guard figures != 0 else { return }
        if figures & 1 != 0 { appendIntegerField(",\"limit\":", limit, to: &out) }
        if figures & 2 != 0 { appendIntegerField(",\"used\":", used, to: &out) }
        if figures & 4 != 0 { appendIntegerField(",\"remaining\":", remaining, to: &out) }
    }

    /// A decision text's two parts as `append` writes them: `,"message":"…"` (returning where it ends), then
    /// `,"upgradeTo":"…"` and `,"policy":"file:line:column"`, those present.
    package static func appendText(message: String?, upgradeTo: String?, policy: SourceLocation?, to out: inout [UInt8]) -> Int {
        if let message {
            append(literal: ",\"message\":", to: &out)
            appendString(message, to: &out)
        }
        let split = out.count
        if let upgradeTo {
            append(literal: ",\"upgradeTo\":", to: &out)
            appendString(upgradeTo, to: &out)
        }
        if let policy {
            append(literal: ",\"policy\":\"", to: &out)
            appendEscaped(policy.file, to: &out)
            out.append(UInt8(ascii: ":"))
            appendInteger(policy.line, to: &out)
            out.append(UInt8(ascii: ":"))
            appendInteger(policy.column, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        return split
    }

    /// `,"key":` and the integer.
    @inlinable @inline(__always)
    static func appendIntegerField(_ key: StaticString, _ value: Int, to out: inout [UInt8]) {
        append(literal: key, to: &out)
        appendInteger(value, to: &out)
    }

    /// `{"decision":"…","reason":"…"`: one literal per effect, then one per reason (its raw value and the closing
    /// quote), so no `String` is read.
    @usableFromInline
    static func appendHead(effect: Effect, reason: Reason, to out: inout [UInt8]) {
        if let head = head(effect: effect, reason: reason) {
            append(literal: head, to: &out)
            return
        }
        append(literal: effect == .allow ? "{\"decision\":\"allow\",\"reason\":\"" : "{\"decision\":\"deny\",\"reason\":\"", to: &out)
        append(literal: quotedCode(reason), to: &out)
    }

    /// The whole head as one literal for the pairs `decide` gives (an allow that is `allowed`, a deny that is not):
    /// one copy instead of two. nil for the others, which a caller can build by hand.
    @inline(__always)
    static func head(effect: Effect, reason: Reason) -> StaticString? {
        switch (effect, reason) {
        case (.allow, .allowed): "{\"decision\":\"allow\",\"reason\":\"allowed\""
        case (.allow, _), (.deny, .allowed): nil
        case (.deny, .defaultDeny): "{\"decision\":\"deny\",\"reason\":\"default_deny\""
        case (.deny, .deniedByRule): "{\"decision\":\"deny\",\"reason\":\"denied_by_rule\""
        case (.deny, .unauthenticated): "{\"decision\":\"deny\",\"reason\":\"unauthenticated\""
        case (.deny, .stepUpRequired): "{\"decision\":\"deny\",\"reason\":\"step_up_required\""
        case (.deny, .roleRequired): "{\"decision\":\"deny\",\"reason\":\"role_required\""
        case (.deny, .notMember): "{\"decision\":\"deny\",\"reason\":\"not_member\""
        case (.deny, .accessDenied): "{\"decision\":\"deny\",\"reason\":\"access_denied\""
        case (.deny, .ownerOnly): "{\"decision\":\"deny\",\"reason\":\"owner_only\""
        case (.deny, .requiresUpgrade): "{\"decision\":\"deny\",\"reason\":\"requires_upgrade\""
        case (.deny, .limitExceeded): "{\"decision\":\"deny\",\"reason\":\"limit_exceeded\""
        case (.deny, .consentRequired): "{\"decision\":\"deny\",\"reason\":\"consent_required\""
        }
    }

    /// The reason's code and the closing quote (`DecisionWriterTests` checks every reason against `rawValue`).
    @inline(__always)
    static func quotedCode(_ reason: Reason) -> StaticString {
        switch reason {
        case .allowed: "allowed\""
        case .defaultDeny: "default_deny\""
        case .deniedByRule: "denied_by_rule\""
        case .unauthenticated: "unauthenticated\""
        case .stepUpRequired: "step_up_required\""
        case .roleRequired: "role_required\""
        case .notMember: "not_member\""
        case .accessDenied: "access_denied\""
        case .ownerOnly: "owner_only\""
        case .requiresUpgrade: "requires_upgrade\""
        case .limitExceeded: "limit_exceeded\""
        case .consentRequired: "consent_required\""
        }
    }

    /// Appends a literal's bytes.
    @inlinable @inline(__always)
    public static func append(literal: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// A JSON string literal, quotes included.
    @inlinable
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(text, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// The text escaped for a JSON string: `"` and `\\` and control characters, the rest as its UTF-8 bytes.
    public static func appendEscaped(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var runStart = 0
            var i = 0
            while i < bytes.count {
                i = JSONBytes.skipPlain(base, from: i, count: bytes.count, stopAtNonASCII: false)
                guard i < bytes.count else { break }
                let b = base[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else {
                    i += 1
                    continue
                }
                if runStart < i { out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: i - runStart)) }
                appendEscape(b, to: &out)
                i += 1
                runStart = i
            }
            if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: bytes.count - runStart)) }
        }
    }

    @usableFromInline
    static func appendEscape(_ b: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex.utf8Start[Int(b >> 4)], hex.utf8Start[Int(b & 0xF)]])
        }
    }

    /// A decimal integer, as `String(value)` writes it.
    @inlinable
    public static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value >= 0, value < 10 {
            out.append(UInt8(truncatingIfNeeded: value) &+ 0x30)
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: 20 digits and a sign fit
        var magnitude = value.magnitude
        withUnsafeMutableBytes(of: &digits) { buffer in
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                i -= 1
                buffer[i] = UInt8(ascii: "-")
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[i...]))
        }
    }
}

extension Decision {
    /// The contract's compact JSON of this decision, as bytes (`DecisionWriter`).
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        DecisionWriter.append(self, to: &out)
        return out
    }
}

extension DecisionWriter {
    /// One request the reader refused, as an answer's item: `{"error":{"code","field"?,"kind","detail","offset"?}}`,
    /// with `"line":N` after the error when given. The same shape stands in a `/v1/decide/batch` answer and on a
    /// `policy decide --jsonl` line, so one client parses both.
    public static func appendErrorItem(_ error: RequestError, line: Int? = nil, to out: inout [UInt8]) {
        append(literal: "{\"error\":{\"code\":", to: &out)
        appendString(error.code, to: &out)
        if !error.field.isEmpty {
            append(literal: ",\"field\":", to: &out)
            appendString(error.field, to: &out)
        }
        append(literal: ",\"kind\":", to: &out)
        appendString(error.kind.rawValue, to: &out)
        append(literal: ",\"detail\":", to: &out)
        appendString(error.message, to: &out)
        if let offset = error.offset {
            append(literal: ",\"offset\":", to: &out)
            appendInteger(offset, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        if let line {
            append(literal: ",\"line\":", to: &out)
            appendInteger(line, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
