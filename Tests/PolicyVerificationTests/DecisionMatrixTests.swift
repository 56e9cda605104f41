import Foundation
import PolicyEngine
import PolicyModel
import Testing
@testable import PolicyVerification

@Suite struct DecisionMatrixTests {
    static let shippedSets = ["research-crawler", "mimisupply", "contacasal"]

    /// Every cell, through its JSON form as a script replays it, decides as the cell says.
    @Test(arguments: shippedSets)
    func everyCellIsDecideOnItsRequest(_ name: String) throws {
        let policy = try #require(shipped(name).policy)
        let matrix = DecisionMatrix(policy: policy)
        #expect(!matrix.tables.isEmpty)
        for table in matrix.tables {
            #expect(table.cells.count == table.rows.count)
            for (r, row) in table.cells.enumerated() {
                #expect(row.count == table.columns.count)
                for (c, cell) in row.enumerated() {
                    #expect(cell.request.action == table.columns[c].action)
                    let replayed = try Request(json: cell.request.json.rendered())
                    let decision = policy.decide(replayed)
                    #expect(decision == cell.decision, "\(table.resourceType) row \(table.rows[r].id) column \(table.columns[c].label)")
                }
            }
        }
    }

    /// Each cell stands for a block of the space: every request of the type's space decides as its cell says,
    /// and the cells' counts add up to the requests decided.
    @Test(arguments: shippedSets)
    func everyRequestOfTheSpaceDecidesAsItsCell(_ name: String) throws {
        let policy = try #require(shipped(name).policy)
        let matrix = DecisionMatrix(policy: policy)
        for table in matrix.tables {
            let actions = policy.actionNames(of: table.resourceType)
            let space = MatrixBuilder.unionSpace(type: table.resourceType, actions: actions, policy: policy)
            #expect(table.requests == space.count * actions.count)
            #expect(table.cells.joined().reduce(0) { $0 + $1.requests } == table.requests)
            // Outcomes per action as the matrix shows them, and as deciding every request gives them.
            for action in actions {
                let shown = Set(table.columns.indices.filter { table.columns[$0].action == action }.flatMap { c in
                    table.cells.map { Outcome($0[c].decision) }
                })
                var seen = Set<Outcome>()
                space.forEach { point in
                    var request = space.request(point)
                    request.action = action
                    seen.insert(Outcome(policy.decide(request)))
                }
                #expect(seen == shown, "\(table.resourceType).\(action)")
            }
        }
    }

    @Test func theResearchCrawlerAppFitsOnOneScreenWithTheSourcesBoundary() throws {
        let policy = try #require(shipped("research-crawler").policy)
        let table = try #require(DecisionMatrix(policy: policy, resourceType: "app").tables.first)
        #expect(table.rows.count <= 6)
        #expect(table.columns.count <= 16)
        let sources = table.columns.filter { $0.action == "add_source" }.map(\.situations)
        #expect(sources == [["usage.sources ≤ 49"], ["usage.sources ≥ 50"]])
        // Signed out, anonymous, free and every lapsed tier decide alike: one row that says so.
        let first = table.rows[0]
        #expect(first.subjects == ["signed out", "anonymous", "free", "pro (expired)", "academic (expired)", "team (expired)"])
        #expect(first.merged == 6)
    }

    @Test func rowsThatDecideAlikeAreMergedAndDistinctRowsDiffer() throws {
        let policy = try #require(shipped("research-crawler").policy)
        let table = try #require(DecisionMatrix(policy: policy, resourceType: "project").tables.first)
        let vectors = table.cells.map { $0.map { Outcome($0.decision) } }
        #expect(Set(vectors.map { $0.map(\.description) }).count == vectors.count)
        #expect(table.rows.contains { $0.merged > 1 })
        #expect(table.rows.contains { $0.label.contains("member: editor") })
    }

    @Test func anUnknownResourceTypeGivesNoTable() throws {
        let policy = try #require(shipped("research-crawler").policy)
        #expect(DecisionMatrix(policy: policy, resourceType: "folder").tables.isEmpty)
    }

    @Test func htmlIsSelfContainedAndItsDataCannotCloseTheScript() throws {
        let result = load("""
            attributes:
              context:
                kiosk: bool
            resources:
              doc:
                actions:
                  read: {}
            rules:
              - name: nobody
                effect: deny
                actions: [read]
                when: has(context.attributes.kiosk) && context.attributes.kiosk
                message: "</script><b>no</b>"
            """)
        let policy = try #require(result.policy, "\(result.diagnostics)")
        let html = MatrixHTML.page(DecisionMatrix(policy: policy), title: "x<y")
        #expect(!html.contains("</script><b>"))
        #expect(html.contains("Decision matrix: x&lt;y"))
        #expect(!html.contains("http://") && !html.contains("https://"))
        #expect(html.components(separatedBy: "</script>").count == 3)
    }
}
