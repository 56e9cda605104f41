import NIOCore
import PolicyModel

/// The server's own envelopes around the contract's request, a batch and a one-subject check: read by the
/// contract's strict byte reader (`RequestReader.readBatch`, `readCheck`) and answered with `DecisionWriter`.
public enum DecisionBodies {
    /// Most items in one batch or actions in one check.
    public static let maxItems = 10_000

    /// One request in the contract's JSON, read straight from the body's bytes.
    public static func request(_ bytes: some Collection<UInt8>, limit: Int) throws(RequestError) -> Request {
        try Request(json: bytes, limits: RequestLimits(maxBytes: limit))
    }

    /// One request from a body's buffer, by the reader's concrete road over its bytes (`RequestReader.read` of an
    /// `UnsafeRawBufferPointer`). The generic road above, given a `ByteBufferView` from another module, runs
    /// unspecialised: metadata lookups for its `Result` and `Optional`, copies of the request out of a generic
    /// closure, about 3,000 instructions of a decide request (issue 41 item 1). Same limits, same errors.
    public static func request(_ body: ByteBuffer, limit: Int) throws(RequestError) -> Request {
        let reader = RequestReader(limits: RequestLimits(maxBytes: limit))
        let result = body.withUnsafeReadableBytes { bytes -> Result<Request, RequestError> in
            do throws(RequestError) { return .success(try reader.read(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// `{"requests": [...]}`: each item a request or the error that refused it (a bad item fails alone; its
    /// error names `requests[i].field` and the byte offset in the body).
    public static func batch(_ bytes: some Collection<UInt8>, limit: Int) throws(RequestError) -> [Result<Request, RequestError>] {
        try RequestReader(limits: RequestLimits(maxBytes: limit)).readBatch(bytes, maxItems: maxItems)
    }

    /// `{"subject", "resource", "actions": [...], "context"}`: the shared request and its distinct actions.
    public static func check(_ bytes: some Collection<UInt8>, limit: Int) throws(RequestError) -> CheckEnvelope {
        try RequestReader(limits: RequestLimits(maxBytes: limit)).readCheck(bytes, maxActions: maxItems)
    }

    /// `{"decisions":[...]}`: each item a decision, or `{"error": {...}}` in place of one it could not make.
    public static func batchAnswer(_ answers: [Result<Decision, RequestError>]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + answers.count * 160)
        DecisionWriter.append(literal: "{\"decisions\":[", to: &out)
        for (i, answer) in answers.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            switch answer {
            case .success(let decision): DecisionWriter.append(decision, to: &out)
            case .failure(let error): appendErrorItem(error, to: &out)
            }
        }
        DecisionWriter.append(literal: "]}", to: &out)
        return out
    }

    /// `{"decisions":{"<action>":<decision>,...}}`, actions in the order asked.
    public static func checkAnswer(_ answers: [(action: String, decision: Decision)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + answers.count * 180)
        DecisionWriter.append(literal: "{\"decisions\":{", to: &out)
        for (i, answer) in answers.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            DecisionWriter.appendString(answer.action, to: &out)
            out.append(UInt8(ascii: ":"))
            DecisionWriter.append(answer.decision, to: &out)
        }
        DecisionWriter.append(literal: "}}", to: &out)
        return out
    }

    /// One item the reader refused, in the shape `policy decide --jsonl` writes too (`DecisionWriter.appendErrorItem`).
    static func appendErrorItem(_ error: RequestError, to out: inout [UInt8]) {
        DecisionWriter.appendErrorItem(error, to: &out)
    }
}
