// Reading a decision back from the contract's JSON (docs/decision-contract.md), so an app that asks the server
// gets the same `Decision` value the engine returns in-process. Decoding only: the decide path and
// `DecisionWriter` are untouched.

extension Decision: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case decision, reason, message, limit, used, remaining, upgradeTo, policy
    }

    /// A decision from the contract's JSON: `decision` and `reason` required, the other fields optional, and an
    /// unknown field refused (naming it), as requests are read.
    public init(from decoder: any Decoder) throws {
        let any = try decoder.container(keyedBy: AnyKey.self)
        for key in any.allKeys where CodingKeys(stringValue: key.stringValue) == nil {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: any, debugDescription: "unknown field '\(key.stringValue)' of a decision")
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            effect: try c.decode(Effect.self, forKey: .decision),
            reason: try c.decode(Reason.self, forKey: .reason),
            message: try c.decodeIfPresent(String.self, forKey: .message),
            limit: try c.decodeIfPresent(Int.self, forKey: .limit),
            used: try c.decodeIfPresent(Int.self, forKey: .used),
            remaining: try c.decodeIfPresent(Int.self, forKey: .remaining),
            upgradeTo: try c.decodeIfPresent(String.self, forKey: .upgradeTo),
            policy: try c.decodeIfPresent(SourceLocation.self, forKey: .policy))
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension SourceLocation: Decodable {
    /// `file:line:column` as the contract writes it; the file may itself contain `:`, so the two numbers are read
    /// from the end.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, let line = Int(parts[parts.count - 2]), let column = Int(parts[parts.count - 1]),
              line >= 1, column >= 1
        else { return nil }
        let file = parts.dropLast(2).joined(separator: ":")
        guard !file.isEmpty else { return nil }
        self.init(file: file, line: line, column: column)
    }

    /// The contract's `policy` string, `file:line:column`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let location = SourceLocation(parsing: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected 'file:line:column', found '\(text)'")
        }
        self = location
    }
}
