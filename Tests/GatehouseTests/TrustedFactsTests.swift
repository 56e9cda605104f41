import Foundation
import GRDB
import Gatehouse
import Testing

/// Issue 12, finding 6 and 7: with a token, the server's clock and the store's facts decide.
@Suite struct TrustedFactsTests {
    @Test func aCallersPastTimeDoesNotReviveAStaleVerification() async throws {
        let f = try Facade(policySet: "contacasal")
        let owner = try await f.identity.register(username: "ana", pin: "739154", source: .inProcess)
        let space = try await f.identity.createSpace(accessToken: owner.accessToken, name: "Casa", type: "space", inviteRole: "partner")
        let room = Resource(type: "space", id: space.resourceId)
        let signedInAt = f.clock.now
        f.clock.advance(16 * 60)
        let backdated = try await f.gate.decide(token: owner.accessToken, action: "view_dashboard", resource: room, context: Context(now: signedInAt))
        #expect(backdated.reason == .stepUpRequired)
    }

    @Test func aCallersUsageDoesNotLiftALimit() async throws {
        let f = try Facade(policySet: "research-crawler")
        let user = try await f.identity.register(username: "rita", pin: "739154", source: .inProcess)
        let claimedZero = try await f.gate.decide(token: user.accessToken, action: "add_source", resource: Resource(type: "app", usage: ["sources": 0]))
        let claimedFull = try await f.gate.decide(token: user.accessToken, action: "add_source", resource: Resource(type: "app", usage: ["sources": 50]))
        #expect(claimedZero == claimedFull)
    }

    @Test func appWideLimitsCountTheStoredUsage() async throws {
        let f = try Facade(policySet: "research-crawler")
        let user = try await f.identity.register(username: "rita", pin: "739154", source: .inProcess)
        let app = Resource(type: "app")
        #expect(try await f.gate.decide(token: user.accessToken, action: "add_source", resource: app).isAllowed)
        try await f.identity.incrementUserUsage(userId: user.userId, counter: "sources", by: 50)
        let full = try await f.gate.decide(token: user.accessToken, action: "add_source", resource: Resource(type: "app", usage: ["sources": 0]))
        #expect(full.reason == .limitExceeded && full.used == 50)
        // In-process code holding every fact still decides a full request as given.
        let subject = try await f.identity.subject(accessToken: user.accessToken)
        #expect(f.gate.decide(Request(subject: subject, action: "add_source", resource: Resource(type: "app", usage: ["sources": 3]))).isAllowed)
    }

    @Test func anUnknownResourceIsNotOwnedByWhoeverClaimsIt() async throws {
        let f = try Facade(policySet: "research-crawler")
        let user = try await f.identity.register(username: "rita", pin: "739154", source: .inProcess)
        let claimed = Resource(type: "project", id: "not-in-the-store", ownerId: user.userId)
        #expect(try await !f.gate.decide(token: user.accessToken, action: "delete", resource: claimed).isAllowed)
    }

    @Test func unauthenticatedRequestsWriteBoundedRows() async throws {
        let f = try Facade(policySet: "research-crawler", recording: DecisionRecording(mode: .all, signedOut: true))
        let huge = String(repeating: "x", count: 100_000)
        _ = try await f.gate.decide(token: nil, action: huge, resource: Resource(type: huge, id: huge))
        await f.gate.flushDecisionRecords()
        let facts = try await f.database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM decisionLog WHERE facts IS NOT NULL") }
        #expect(facts == 0)  // the request's JSON is past maxRecordedFactsLength: the row keeps no facts
        let longest = try await f.database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT MAX(length(action) + length(resourceType) + length(coalesce(resourceId, ''))) FROM decisionLog")
        }
        #expect((longest ?? 0) <= 3 * 128)
    }
}
