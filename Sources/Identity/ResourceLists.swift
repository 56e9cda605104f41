import Foundation
import PolicyEngine
import PolicyModel

/// One page of a resource list: ids in id order, and whether more follow the last.
public struct ResourcePage: Sendable, Hashable {
    /// The ids, ascending (the store's own order of ids).
    public var ids: [String]
    /// Whether the store holds more matching ids after the last of `ids`.
    public var hasMore: Bool

    /// A page of `ids`, `hasMore` when others follow.
    public init(ids: [String], hasMore: Bool) {
        self.ids = ids
        self.hasMore = hasMore
    }
}

extension IdentityService {
    /// The largest page a list answers.
    public static let maximumListLimit = 1000

    /// Where a plan's resource fields live in Gatehouse's own tables, as `decide` by token reads them
    /// (`resourceFacts`): the owner column; the member's role and the member count from `membership` (the owner's
    /// own row says `owner`); usage from `usageCounter`, no row counting as 0; and no attributes, which the store does
    /// not keep, so a condition reading one sees it absent, as `decide` does for a request without it.
    package static let planColumns = PlanColumns(
        id: #""resource"."id""#, ownerId: #""resource"."ownerId""#,
        memberRole: #"(SELECT "m"."role" FROM "membership" "m" WHERE "m"."resourceId" = "resource"."id" AND "m"."userId" = ?)"#,
        usageCounter: #"(SELECT "u"."value" FROM "usageCounter" "u" WHERE "u"."resourceId" = "resource"."id" AND "u"."name" = ?)"#,
        memberCount: #"(SELECT COUNT(*) FROM "membership" "c" WHERE "c"."resourceId" = "resource"."id")"#,
        unmappedAttributesAreAbsent: true)

    /// The ids of the stored resources of `type` that `plan` allows, in id order, after `after` (nil: from the
    /// first), at most `limit` of them: one query on the store (the plan as its `WHERE`), reading `limit + 1` rows
    /// to know whether more follow. No resource is decided one by one.
    ///
    /// `plan` must be the plan for `type` (and the subject whose list it is): the query reads the resource's owner,
    /// members and usage as `decide` by token does. A plan reading something with no SQL form is `not_listable`,
    /// naming it.
    public func resourceIds(type: String, plan: ResourcePlan, after: String?, limit: Int) async throws -> ResourcePage {
        guard (1...64).contains(type.utf8.count), !type.utf8.contains(0) else { throw IdentityError.invalid("type", "must be 1 to 64 bytes without a NUL character") }
        if let after { try Self.validateResourceId(after, field: "cursor") }
        guard (1...Self.maximumListLimit).contains(limit) else { throw IdentityError.invalid("limit", "must be 1 to \(Self.maximumListLimit)") }
        if case .never = plan { return ResourcePage(ids: [], hasMore: false) }
        return try await store.read { tx in
            let query = try Self.listQuery(type: type, plan: plan, after: after, limit: limit, placeholders: tx.placeholders)
            let ids = try await tx.fetchIds(query.sql, query.bindings)
            return ResourcePage(ids: Array(ids.prefix(limit)), hasMore: ids.count > limit)
        }
    }

    /// `SELECT "id" FROM "resource" WHERE "type" = ? [AND "id" > ?] AND (plan) ORDER BY "id" LIMIT limit + 1`, every
    /// value bound, placeholders in the order they appear.
    package static func listQuery(type: String, plan: ResourcePlan, after: String?, limit: Int, placeholders: SQLPlaceholders) throws -> SQLWhere {
        var bindings: [SQLValue] = [.text(type)]
        var sql = #"SELECT "resource"."id" FROM "resource" WHERE "resource"."type" = "# + placeholders.mark(after: 0)
        if let after {
            sql += #" AND "resource"."id" > "# + placeholders.mark(after: bindings.count)
            bindings.append(.text(after))
        }
        let clause: SQLWhere
        do {
            let first: SQLPlaceholders
            switch placeholders {
            case .questionMarks: first = .questionMarks
            case .numbered(let start): first = .numbered(first: start + bindings.count)
            }
            clause = try plan.sqlWhere(planColumns, placeholders: first)
        } catch {
            throw IdentityError(.notListable, field: error.field, "the policy's plan for this list has no SQL form")
        }
        sql += " AND " + clause.sql
        bindings += clause.bindings
        sql += #" ORDER BY "resource"."id" LIMIT "# + placeholders.mark(after: bindings.count)
        bindings.append(.int(limit + 1))
        return SQLWhere(sql: sql, bindings: bindings)
    }
}
