import Foundation
import Gatehouse
import Testing

/// Issue 22, F2, at the facade: app-wide usage is the user's own counters, whatever resource id a request names.
@Suite struct FindingsFacadeTests {
    /// A resource of a type without member roles (`app`, made by a client before spaces were limited to shared
    /// types) lends neither its empty counters to its owner nor to anyone else.
    @Test func f2AStoredResourceOfAnAppWideTypeDoesNotLiftTheUsersLimit() async throws {
        let f = try Facade(policySet: "research-crawler")
        let user = try await f.identity.register(username: "rita", pin: "739154", source: .inProcess)
        let other = try await f.identity.register(username: "otto", pin: "739154", source: .inProcess)
        try await f.identity.incrementUserUsage(userId: user.userId, counter: "sources", by: 50)
        let own = try await f.identity.createSpace(accessToken: user.accessToken, name: "fresh", type: "app", inviteRole: "editor")
        let others = try await f.identity.createSpace(accessToken: other.accessToken, name: "theirs", type: "app", inviteRole: "editor")
        let project = try await f.identity.createSpace(accessToken: other.accessToken, name: "p", type: "project", inviteRole: "editor")
        for id in [own.resourceId, others.resourceId, project.resourceId, "unknown"] {
            let decision = try await f.gate.decide(token: user.accessToken, action: "add_source", resource: Resource(type: "app", id: id))
            #expect(decision.reason == .limitExceeded && decision.used == 50, "\(id): \(decision.reason)")
        }
    }
}
