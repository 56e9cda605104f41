import Foundation
@testable import GatehouseClient
import Testing
import GatehouseTestSupport

/// `GatehouseClient.resources` and `plan` against a real server: pages by cursor, the plan's JSON, refusals by field.
@Suite(.startsServers) struct ResourceListClientTests {
    @Test func pagesAndPlansThroughTheClient() async throws {
        try await withServer("research-crawler") { server in
            let client = GatehouseClient(serverURL: server.url)
            let userId = try await client.register(username: "lists.owner", pin: "604219")
            var created: [String] = []
            for name in ["A", "B", "C"] { created.append(try await client.createSpace(name: name, type: "project", inviteRole: "editor").resourceId) }

            var listed: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await client.resources(type: "project", action: "edit", cursor: cursor, limit: 2)
                listed += page.ids
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil && pages < 10
            #expect(listed == created.sorted())
            #expect(pages == 2)

            let plan = try await client.plan(action: "edit", resourceType: "project")
            #expect(plan.plan == "conditional")
            let whereText = String(decoding: try #require(plan.whereJSON), as: UTF8.self)
            #expect(whereText.contains(userId))

            let refused = await thrownClientError { _ = try await client.resources(type: "app", action: "view") }
            #expect(refused?.code == "invalid_input")
            #expect(refused?.field == "type")
            let signedOut = GatehouseClient(serverURL: server.url)
            #expect(try await signedOut.plan(action: "edit", resourceType: "project").plan == "never")
        }
    }
}
