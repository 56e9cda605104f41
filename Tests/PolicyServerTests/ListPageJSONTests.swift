import PolicyModel
import Testing

@testable import PolicyServer

/// `GET /v1/resources` writes its page straight to bytes (`ListController.pageJSON`): the bytes must be the ones the
/// `JSONText` tree it replaced renders, for any id a store may hold and with or without a next cursor.
@Suite struct ListPageJSONTests {
    static func tree(_ ids: [String], _ next: String?) -> [UInt8] {
        var fields: [JSONText.Field] = [.init("ids", .array(ids.map { .string($0) }))]
        if let next { fields.append(.init("nextCursor", .string(next))) }
        return Array(JSONText.object(fields).rendered().utf8)
    }

    @Test(arguments: [
        ([], nil),
        (["p1"], nil),
        (["p1", "p2", "p3"], "MQBwcm9qZWN0AHZpZXcAcDM"),
        (["quote \" and backslash \\", "tab\tnewline\nreturn\r", "\u{0}\u{1}\u{1F}\u{7F}", "é ü 日本 🚀", ""], "a\"b"),
        ([String(repeating: "x", count: 10_000), "/slash/"], ""),
    ] as [([String], String?)])
    func thePageIsTheTreesBytes(ids: [String], next: String?) {
        #expect(ListController.pageJSON(ids: ids, nextCursor: next) == Self.tree(ids, next))
    }

    @Test func aThousandGeneratedIdsAreTheTreesBytes() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab\"\\\t\n\u{0}\u{1F} é日🚀/")
        let ids = (0..<1_000).map { _ in String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }) }
        #expect(ListController.pageJSON(ids: ids, nextCursor: ids.last) == Self.tree(ids, ids.last))
    }
}
