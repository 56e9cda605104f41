import Foundation
import GatehouseTestSupport
import PolicyModel
import Testing

/// `RequestWriter` writes a decision record's facts straight to bytes: on generated requests (every field, escapes,
/// non-ASCII text, nested attribute values) its bytes must be `json.rendered()`'s, and with user ids renamed, those
/// of the request with its ids renamed first (as the record's pseudonymisation does).
@Suite(.computeBound) struct RequestWriterTests {
    @Test func writesWhatTheJSONTreeRenders() throws {
        var generator = RequestJSONGenerator(seed: 0x5EED_0037)
        var withMembers = 0, withAttributes = 0
        for _ in 0..<3000 {
            var request = try Request(json: generator.request())
            if generator.random.chance(30) { request.context.now = Date(timeIntervalSince1970: 1_795_000_060.25) }
            if generator.random.chance(30) {
                request.resource.members = ["u2": "editor", "u1": "owner", "": "viewer", "u3": "owner"]
                request.resource.ownerId = generator.random.chance(50) ? "u1" : ""
            }
            #expect(RequestWriter.text(request) == request.json.rendered(), "\(request)")

            // Renamed ids: two members renamed to one name keep the first's role, as a dictionary built from the
            // renamed pairs does.
            let rename: (String) -> String = { $0 == "u3" ? "p-u2" : "p-" + $0 }
            var renamed = request
            if let id = renamed.subject.id, !id.isEmpty { renamed.subject.id = rename(id) }
            if let owner = renamed.resource.ownerId, !owner.isEmpty { renamed.resource.ownerId = rename(owner) }
            renamed.resource.members = Dictionary(request.resource.members.map { (rename($0.key), $0.value) }, uniquingKeysWith: { a, _ in a })
            #expect(RequestWriter.text(request, userId: rename) == renamed.json.rendered(), "\(request)")
            if !request.resource.members.isEmpty { withMembers += 1 }
            if !request.subject.attributes.isEmpty || !request.resource.attributes.isEmpty { withAttributes += 1 }
        }
        #expect(withMembers > 500)
        #expect(withAttributes > 500)
    }
}
