import Foundation

extension Value: Decodable {
    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [Value] = []
            while !array.isAtEnd { items.append(try array.decode(Value.self)) }
            self = .list(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var map: [String: Value] = [:]
            for key in object.allKeys { map[key.stringValue] = try object.decode(Value.self, forKey: key) }
            self = .map(map)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? single.decode(Int.self) {
            self = .int(i)
        } else if let d = try? single.decode(Double.self) {
            self = .double(d)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Parses JSON text into a value tree with Foundation's `JSONDecoder`; a syntax error becomes a `RequestError`.
    ///
    /// Not how requests are read (`RequestReader` is): kept as the reference the hand-written reader is tested
    /// and measured against.
    public static func parseJSON(_ text: some StringProtocol) throws(RequestError) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(text.utf8))
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw RequestError(field: "", "invalid JSON" + (detail.map { ": \($0)" } ?? ""), kind: .syntax)
        } catch {
            throw RequestError(field: "", "invalid JSON", kind: .syntax)
        }
    }
}
