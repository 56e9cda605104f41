import PolicyModel

/// The server's own envelopes around the contract's request: a batch and a one-subject check.
///
/// The items are read by the contract's reader (`Request(value:)`, the same one `Request(json:)`
/// uses), so an item's error names its field the way a single request's does.
public enum DecisionBodies {
    /// Most items in one batch or actions in one check.
    public static let maxItems = 10_000

    /// One request in the contract's JSON, read straight from the body's bytes.
    public static func request(_ bytes: some Collection<UInt8>, limit: Int) throws(RequestError) -> Request {
        try Request(json: bytes, limits: RequestLimits(maxBytes: limit))
    }

    /// `{"requests": [...]}`: each item read on its own, so a bad one fails alone.
    public static func batch(_ text: String) throws(RequestError) -> [Result<Request, RequestError>] {
        let object = try envelope(text, allowed: ["requests"])
        guard let value = object["requests"] else { throw RequestError(field: "requests", "is required") }
        guard case .list(let items) = value else { throw RequestError(field: "requests", "must be an array of requests") }
        guard items.count <= maxItems else { throw RequestError(field: "requests", "holds more than \(maxItems) requests") }
        return items.enumerated().map { i, item in
            do throws(RequestError) {
                return .success(try Request(value: item))
            } catch {
                return .failure(
                    RequestError(field: "requests[\(i)]" + (error.field.isEmpty ? "" : "." + error.field), error.message, kind: error.kind))
            }
        }
    }

    /// `{"subject", "resource", "actions": [...], "context"}`: one request per action, in the order given.
    public static func check(_ text: String) throws(RequestError) -> [(action: String, request: Request)] {
        let object = try envelope(text, allowed: ["subject", "resource", "actions", "context"])
        guard let value = object["actions"] else { throw RequestError(field: "actions", "is required") }
        guard case .list(let items) = value, !items.isEmpty else { throw RequestError(field: "actions", "must be a non-empty array of action names") }
        guard items.count <= maxItems else { throw RequestError(field: "actions", "holds more than \(maxItems) actions") }
        var seen: Set<String> = []
        var out: [(action: String, request: Request)] = []
        for (i, item) in items.enumerated() {
            guard case .string(let action) = item else { throw RequestError(field: "actions[\(i)]", "must be a string") }
            guard seen.insert(action).inserted else { throw RequestError(field: "actions[\(i)]", "repeats '\(action)'") }
            var fields = object
            fields["actions"] = nil
            fields["action"] = .string(action)
            do throws(RequestError) {
                out.append((action, try Request(value: .map(fields))))
            } catch where error.field == "action" {
                throw RequestError(field: "actions[\(i)]", error.message, kind: error.kind)
            }
        }
        return out
    }

    private static func envelope(_ text: String, allowed: Set<String>) throws(RequestError) -> [String: Value] {
        guard case .map(let object) = try Value.parseJSON(text) else { throw RequestError(field: "", "the body must be a JSON object") }
        for key in object.keys.sorted() where !allowed.contains(key) {
            throw RequestError(field: key, "is not a known field (expected: \(allowed.sorted().joined(separator: ", ")))")
        }
        return object
    }

    /// An error item of a batch answer, in place of the decision it could not make.
    public static func errorItem(_ error: RequestError) -> JSONText {
        let problem = Problem(error)
        var fields: [JSONText.Field] = [.init("code", .string(problem.code))]
        if let field = problem.field, !field.isEmpty { fields.append(.init("field", .string(field))) }
        if let kind = problem.kind { fields.append(.init("kind", .string(kind))) }
        if let detail = problem.detail { fields.append(.init("detail", .string(detail))) }
        return .object([.init("error", .object(fields))])
    }
}
