import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing

/// `ResourcePlan.sqlWhere`: the plan as a parameterised WHERE over the caller's columns, every value a bind parameter.
@Suite struct PlanSQLTests {
    static let policy: CompiledPolicy? = PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
        tiers:
          free: {name: Free, default: true}
          pro: {name: Pro}
        limits:
          docs: {name: documents, counter: docs, tiers: {free: 3}}
        attributes:
          resource:
            region: string
            archived: bool
        resources:
          doc:
            owner: ownerId
            roles:
              viewer: {grants: [view]}
              editor: {inherits: [viewer], grants: [edit]}
            actions:
              view: {}
              edit: {limit: docs}
        rules:
          - name: no-archived-edits
            effect: deny
            actions: [edit]
            when: resource.attributes.archived == true
          - name: eu-viewers
            effect: allow
            actions: [view]
            when: resource.attributes.region in ["eu", "ch"] && subject.tier == "pro"
        """.utf8))]).policy

    static let columns = PlanColumns(
        id: "docs.id", ownerId: "docs.owner_id", attributes: ["region": "docs.region", "archived": "docs.archived"], usage: ["docs": "docs.doc_count"],
        memberRole: "(SELECT role FROM members m WHERE m.doc_id = docs.id AND m.user_id = ?)")

    static func subject(_ tier: String) -> Subject {
        var subject = Subject(id: "u'1; DROP TABLE docs")
        subject.tier = tier
        return subject
    }

    @Test func valuesAreBoundNeverWrittenIntoTheSQL() throws {
        let policy = try #require(Self.policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "edit", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try plan.sqlWhere(Self.columns)
        #expect(!clause.sql.contains("DROP"))
        #expect(clause.sql.filter { $0 == "?" }.count == clause.bindings.count)
        #expect(clause.sql == "((NOT (docs.archived = ?)) AND ((docs.owner_id = ?) OR ((SELECT role FROM members m WHERE m.doc_id = docs.id AND m.user_id = ?) IN (?))) AND (COALESCE(docs.doc_count, 0) < ?))")
        #expect(clause.bindings == [.bool(true), .text("u'1; DROP TABLE docs"), .text("u'1; DROP TABLE docs"), .text("editor"), .int(3)])
    }

    @Test func subjectPartsAreFilledInAndAllowRulesJoinWithOr() throws {
        let policy = try #require(Self.policy)
        let pro = policy.plan(subject: Self.subject("pro"), action: "view", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try pro.sqlWhere(Self.columns)
        #expect(clause.sql.contains("docs.region IN (?, ?)"))
        #expect(clause.bindings.contains(.text("ch")) && clause.bindings.contains(.text("eu")))
        // On free the allow rule's subject part is false, so only standing remains.
        let free = try policy.plan(subject: Self.subject("free"), action: "view", resourceType: "doc", context: Context()).sqlWhere(Self.columns)
        #expect(!free.sql.contains("region"))
    }

    @Test func alwaysAndNeverAreConstants() throws {
        let policy = try #require(Self.policy)
        var signedOut = Subject()
        signedOut.tier = "pro"
        let never = policy.plan(subject: signedOut, action: "view", resourceType: "doc")
        #expect(try never.sqlWhere(Self.columns) == SQLWhere(sql: "FALSE", bindings: []))
        #expect(try ResourcePlan.always.sqlWhere(Self.columns) == SQLWhere(sql: "TRUE", bindings: []))
    }

    @Test func aMissingColumnIsAnErrorNamingTheField() throws {
        let policy = try #require(Self.policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "edit", resourceType: "doc")
        var columns = Self.columns
        columns.usage = [:]
        #expect(throws: PlanSQLError.self) { try plan.sqlWhere(columns) }
        do {
            _ = try plan.sqlWhere(columns)
        } catch {
            #expect(error.field == "resource.usage.docs")
        }
    }

    @Test func numberedPlaceholdersFollowTheCallersOwnValues() throws {
        let policy = try #require(Self.policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "edit", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try plan.sqlWhere(Self.columns, placeholders: .numbered(first: 3))
        #expect(!clause.sql.contains("?"))
        #expect(clause.sql == "((NOT (docs.archived = $3)) AND ((docs.owner_id = $4) OR ((SELECT role FROM members m WHERE m.doc_id = docs.id AND m.user_id = $5) IN ($6))) AND (COALESCE(docs.doc_count, 0) < $7))")
        #expect(clause.bindings.count == 5)
        #expect(SQLPlaceholders.questionMarks.mark(after: 4) == "?")
    }

    @Test func anUnmappedAttributeIsAbsentWhenTheColumnsSaySo() throws {
        let policy = try #require(Self.policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "edit", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        var columns = Self.columns
        columns.attributes = [:]
        // Without the flag an unmapped attribute is an error naming it.
        do {
            _ = try plan.sqlWhere(columns)
            Issue.record("an unmapped attribute translated")
        } catch {
            #expect(error.field == "resource.attributes.archived")
        }
        // With it, the attribute is SQL NULL: the deny rule's condition is an error, which keeps every row out, as
        // decide denies a resource without the attribute.
        columns.unmappedAttributesAreAbsent = true
        let clause = try plan.sqlWhere(columns)
        #expect(clause.sql.hasPrefix("((NOT NULL) AND "))
        #expect(!clause.bindings.contains(.bool(true)))
        var resource = Resource(type: "doc")
        resource.ownerId = Self.subject("free").id
        #expect(policy.decide(Request(subject: Self.subject("free"), action: "edit", resource: resource, context: Context(now: Date(timeIntervalSince1970: 0)))).effect == .deny)
    }

    @Test func hasOfAnAbsentAttributeIsFalseNotAnError() throws {
        let policy = try #require(PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
            tiers:
              free: {name: Free, default: true}
            attributes:
              resource:
                region: string
            resources:
              doc:
                owner: ownerId
                roles:
                  viewer: {grants: [view]}
                actions:
                  view: {}
            rules:
              - name: regional
                effect: allow
                actions: [view]
                when: "!has(resource.attributes.region) || resource.attributes.region.startsWith('e')"
            """.utf8))]).policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "view", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try plan.sqlWhere(PlanColumns(ownerId: "o", memberRole: "r(?)", unmappedAttributesAreAbsent: true))
        #expect(clause.sql.contains("(NOT FALSE) OR NULL"))
    }

    @Test func countersAndMembersByExpressionBindTheirNames() throws {
        let policy = try #require(PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
            tiers:
              free: {name: Free, default: true}
            resources:
              doc:
                owner: ownerId
                roles:
                  viewer: {grants: [view]}
                actions:
                  view: {}
            rules:
              - name: small-and-shared
                effect: allow
                actions: [view]
                when: "resource.usage.pages < 10 && size(resource.members) > 1 && subject.id in resource.members && resource.members[subject.id] == 'viewer'"
            """.utf8))]).policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "view", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let columns = PlanColumns(
            ownerId: "docs.owner", memberRole: "(SELECT role FROM m WHERE m.doc = docs.id AND m.user = ?)",
            usageCounter: "(SELECT value FROM c WHERE c.doc = docs.id AND c.name = ?)", memberCount: "(SELECT COUNT(*) FROM m WHERE m.doc = docs.id)")
        let clause = try plan.sqlWhere(columns, placeholders: .numbered(first: 1))
        #expect(clause.sql.contains("COALESCE((SELECT value FROM c WHERE c.doc = docs.id AND c.name = $"))
        #expect(clause.sql.contains("(SELECT COUNT(*) FROM m WHERE m.doc = docs.id) > $"))
        #expect(clause.bindings.contains(.text("pages")))
        #expect(!clause.sql.contains("pages") && !clause.sql.contains("DROP"))
        #expect(clause.sql.filter { $0 == "$" }.count == clause.bindings.count)
    }
    @Test func aMemberRequirementNoRoleGrantsBindsNothing() throws {
        // `delete` is granted by no role: only the owner may, and the member part is FALSE. It used to bind the
        // subject's id for a placeholder it never wrote, so the statement had one value too many (SQLite: misuse).
        let policy = try #require(PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
            tiers:
              free: {name: Free, default: true}
            resources:
              doc:
                owner: ownerId
                roles:
                  viewer: {grants: [view]}
                actions:
                  view: {}
                  delete: {}
            """.utf8))]).policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "delete", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try plan.sqlWhere(Self.columns)
        #expect(clause.sql == "((docs.owner_id = ?) OR FALSE)")
        #expect(clause.sql.filter { $0 == "?" }.count == clause.bindings.count)
    }
    @Test func theSubjectsKeyInAMembersIndexIsFilledIn() throws {
        // `resource.members[subject.id]` must read the subject's own member role. The subject's id inside the index
        // was left unfilled, so the SQL could not name it (HEAD: no SQL form; with NULL for errors: NULL on every
        // row), and a list lost every resource the rule allowed.
        let policy = try #require(PolicyCompiler.compile(name: "t", files: [PolicyFileInput(path: "t.yaml", bytes: Array("""
            tiers:
              free: {name: Free, default: true}
            resources:
              doc:
                owner: ownerId
                roles:
                  viewer: {grants: [view]}
                  editor: {grants: [view]}
                actions:
                  view: {}
                  edit: {}
            rules:
              - name: editors-edit
                effect: allow
                actions: [edit]
                when: "resource.members[subject.id] == 'editor'"
            """.utf8))]).policy)
        let plan = policy.plan(subject: Self.subject("free"), action: "edit", resourceType: "doc", context: Context(now: Date(timeIntervalSince1970: 0)))
        let clause = try plan.sqlWhere(Self.columns)
        #expect(clause.sql.contains("((SELECT role FROM members m WHERE m.doc_id = docs.id AND m.user_id = ?) = ?)"))
        #expect(clause.bindings.contains(.text("editor")))
        #expect(clause.sql.filter { $0 == "?" }.count == clause.bindings.count)
    }
}
