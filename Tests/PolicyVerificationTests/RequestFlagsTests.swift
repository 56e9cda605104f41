import Foundation
import PolicyCompiler
import PolicyModel
import PolicyVerification
import Testing

/// Building `policy explain` requests from flags: the cases the golden transcript does not show.
@Suite struct RequestFlagsTests {
    static let result = PolicyCompiler.compile(name: "f", files: [PolicyFileInput(path: "f/app.yaml", bytes: Array("""
        attributes:
          resource:
            payer: string
            window: duration
          context:
            scores: list<int>
        resources:
          payment:
            owner: attributes.payer
            roles:
              approver: {grants: [approve]}
            actions:
              approve: {}
        """.utf8))])

    static let now = Timestamp.parse("2026-06-01T12:00:00Z")!

    func flags(_ edit: (inout RequestFlags) -> Void) -> RequestFlags {
        var f = RequestFlags()
        f.action = "approve"
        edit(&f)
        return f
    }

    @Test func ownerIsWrittenToTheTypesOwnerField() throws {
        let request = try flags { $0.owner = "self" }.request(for: Self.result, clock: Self.now)
        #expect(request.resource.type == "payment")
        #expect(request.resource.ownerId == nil)
        #expect(request.resource.attributes["payer"] == .string("user"))
        #expect(request.context.now == Self.now, "the clock is written into the request so it can be replayed")
    }

    @Test func valuesAreTypedByTheirDeclarations() throws {
        let request = try flags {
            $0.contextAttributes = ["scores=1,2,3"]
            $0.resourceAttributes = ["window=1h30m"]
        }.request(for: Self.result, clock: Self.now)
        #expect(request.context.attributes["scores"] == .list([.int(1), .int(2), .int(3)]))
        #expect(request.resource.attributes["window"] == .string("1h30m"))
        #expect(throws: RequestFlagError.self) { try flags { $0.contextAttributes = ["scores=1,x"] }.request(for: Self.result) }
        #expect(throws: RequestFlagError.self) { try flags { $0.resourceAttributes = ["window=soon"] }.request(for: Self.result) }
        #expect(throws: RequestFlagError.self) { try flags { $0.resourceAttributes = ["=x"] }.request(for: Self.result) }
    }

    @Test func contradictionsAreRefusedByFlag() {
        func flag(_ f: RequestFlags) -> String? {
            do {
                _ = try f.request(for: Self.result)
                return nil
            } catch {
                return error.flag
            }
        }
        #expect(flag(flags { $0.signedOut = true; $0.subjectID = "u" }) == "--signed-out")
        #expect(flag(flags { $0.signedOut = true; $0.memberRole = "approver" }) == "--member-role")
        #expect(flag(flags { $0.signedOut = true; $0.owner = "self" }) == "--owner")
        #expect(flag(flags { $0.expired = true; $0.subscriptionExpiry = "2026-01-01T00:00:00Z" }) == "--expired")
        #expect(flag(flags { $0.authMethod = "pin"; $0.verifiedAgo = "5m"; $0.verifiedAt = "2026-01-01T00:00:00Z" }) == "--verified-ago")
        #expect(flag(flags { $0.authMethod = "pin"; $0.verifiedAgo = "-5m" }) == "--verified-ago")
        #expect(flag(flags { $0.authMethod = "face" }) == "--auth-method")
        #expect(flag(RequestFlags()) == "--action")
        #expect(flag(flags { $0.memberRole = "approver" }) == nil)
    }

    @Test func noFlagsMeansTheRequestComesFromJSON() {
        #expect(RequestFlags().isEmpty)
        #expect(!flags { _ in }.isEmpty)
    }
}
