import Foundation

/// The requirements of a generated `APIProtocol` (swift-openapi-generator's `Types.swift` in `folder`): one
/// `func <operationId>(_ input: Operations.X.Input)` each, read from the text; empty when the file has no protocol.
public func generatedAPIRequirements(in folder: URL) throws -> Set<String> {
    let text = try String(contentsOf: folder.appendingPathComponent("Types.swift"), encoding: .utf8)
    guard let start = text.range(of: "package protocol APIProtocol: Sendable {") else { return [] }
    let rest = text[start.upperBound...]
    let body = rest[..<(rest.range(of: "\n}\n")?.lowerBound ?? rest.endIndex)]
    var calls: Set<String> = []
    for line in body.split(separator: "\n") {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("func "), let paren = trimmed.firstIndex(of: "(") else { continue }
        calls.insert(String(trimmed[trimmed.index(trimmed.startIndex, offsetBy: 5)..<paren]))
    }
    return calls
}
