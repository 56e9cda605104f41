import Foundation
import PolicyModel
import Testing

@Suite struct RequestCodingTests {
    @Test func readsTheContractExample() throws {
        let request = try Request(json: """
            {"subject": {"id": "user-1", "tier": "pro", "subscriptionExpiry": "2026-12-01T00:00:00Z",
                         "roles": ["customer"], "auth": {"method": "pin", "verifiedAt": "2026-11-22T11:58:00Z"},
                         "attributes": {"dataSharing": "minimal"}},
             "action": "add_source",
             "resource": {"type": "project", "id": "p1", "ownerId": "user-2", "members": {"user-1": "editor"},
                          "usage": {"sources": 49}, "attributes": {}},
             "context": {"now": "2026-11-22T12:00:00Z"}}
            """)
        #expect(request.subject.id == "user-1")
        #expect(request.subject.auth == Authentication(method: "pin", verifiedAt: Timestamp.parse("2026-11-22T11:58:00Z")))
        #expect(request.subject.attributes["dataSharing"] == .string("minimal"))
        #expect(request.resource.members == ["user-1": "editor"])
        #expect(request.resource.usage == ["sources": 49])
        #expect(request.context.now == Date(timeIntervalSince1970: 1_795_348_800))
        // Writing it back and reading it again gives the same request.
        #expect(try Request(json: request.json.rendered()) == request)
    }

    @Test(arguments: [
        (#"{"action": "x"}"#, "resource"),
        (#"{"action": 3, "resource": {"type": "app"}}"#, "action"),
        (#"{"action": "x", "resource": {"typ": "app"}}"#, "resource.typ"),
        (#"{"action": "x", "resource": {"type": "app", "usage": {"sources": "many"}}}"#, "resource.usage.sources"),
        (#"{"action": "x", "resource": {"type": "app"}, "subject": {"auth": {"method": "pin", "verifiedAt": "yesterday"}}}"#, "subject.auth.verifiedAt"),
        (#"{"action": "x", "resource": {"type": "app"}, "subject": {"roles": ["a", 1]}}"#, "subject.roles[1]"),
    ])
    func namesTheFieldAtFault(json: String, field: String) {
        #expect(throws: RequestError.self) { try Request(json: json) }
        do {
            _ = try Request(json: json)
        } catch {
            #expect(error.field == field)
        }
    }

    @Test func decisionJSONKeepsContractOrderAndDropsAbsentFields() {
        let decision = Decision(
            effect: .deny, reason: .limitExceeded, message: "m", limit: 50, used: 50, remaining: 0, upgradeTo: "pro",
            policy: SourceLocation(file: "p/tiers.yaml", line: 14, column: 5))
        #expect(decision.json.rendered() == #"{"decision":"deny","reason":"limit_exceeded","message":"m","limit":50,"used":50,"remaining":0,"upgradeTo":"pro","policy":"p/tiers.yaml:14:5"}"#)
        #expect(Decision(effect: .allow, reason: .allowed).json.rendered() == #"{"decision":"allow","reason":"allowed"}"#)
    }

    @Test func signedInNeedsAnIdAndANonAnonymousMethod() {
        #expect(!Subject().isSignedIn)
        #expect(Subject(id: "u").isSignedIn)
        #expect(!Subject(id: "u", auth: Authentication(method: "anonymous")).isSignedIn)
        #expect(Subject(id: "u", auth: Authentication(method: "pin")).isSignedIn)
        #expect(!Subject(id: "").isSignedIn)
    }

    @Test func aTimestampWithTrailingTextIsRefused() {
        #expect(Timestamp.parse("2077-12-02T20:37:56.714-02:38") != nil)
        #expect(Timestamp.parse("2026-11-22T11:58:00Z") != nil)
        for bad in ["2077-12-02T20:37:56.714-02:38*", "2026-11-22T11:58:00Zjunk", "2026-11-22T11:58:00Z ", "2026-11-22 11:58:00Z"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }
}
