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
    package static let planColumns = planColumns(id: #""resource"."id""#, ownerId: #""resource"."ownerId""#)

    /// `planColumns` for a row whose resource id and owner are the columns `id` and `ownerId` (a membership row's own
    /// copies, v22, in a list's membership arm).
    static func planColumns(id: String, ownerId: String) -> PlanColumns {
        PlanColumns(
            id: id, ownerId: ownerId,
            memberRole: #"(SELECT "m"."role" FROM "membership" "m" WHERE "m"."resourceId" = \#(id) AND "m"."userId" = ?)"#,
            usageCounter: #"(SELECT "u"."value" FROM "usageCounter" "u" WHERE "u"."resourceId" = \#(id) AND "u"."name" = ?)"#,
            memberCount: #"(SELECT COUNT(*) FROM "membership" "c" WHERE "c"."resourceId" = \#(id))"#,
            unmappedAttributesAreAbsent: true)
    }

    /// A membership arm's columns: the listed membership row's copies of its resource's id and owner (v22).
    static let listedColumns = planColumns(id: #""listed"."resourceId""#, ownerId: #""listed"."resourceOwnerId""#)

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
        // One statement: `readOne` (on PostgreSQL no BEGIN and COMMIT around it, one round trip).
        return try await store.readOne { tx in
            let query = try Self.listQuery(type: type, plan: plan, after: after, limit: limit, placeholders: tx.placeholders)
            let ids = try await tx.fetchIds(query.sql, query.bindings)
            return ResourcePage(ids: Array(ids.prefix(limit)), hasMore: ids.count > limit)
        }
    }

    /// The list's query, every value bound, placeholders in the order they appear.
    ///
    /// When every resource the plan allows is one the user owns or holds a membership of (`narrowing(_:)`: an `or`
    /// of `owner is` and `role in` terms, or an `and` with such a part, the shipped sets' usual form), the query starts
    /// from those rows through their indexes, one arm per source, each in id order and cut at `limit + 1`, the whole
    /// plan kept as a filter in each arm:
    /// `SELECT "id" FROM (members arm ORDER BY "resourceId" LIMIT n) UNION SELECT "id" FROM (owner arm ...) ORDER BY "id"
    /// LIMIT n` (SQLite: `members arm UNION owner arm ORDER BY "id" LIMIT n`), or the one arm alone when there is one
    /// source. Otherwise, the generic form walks the type in id order:
    /// `SELECT "id" FROM "resource" WHERE "type" = ? [AND "id" > ?] AND (plan) ORDER BY "id" LIMIT limit + 1`.
    /// Both answer the same ids: an arm only leaves out rows the plan does not allow.
    package static func listQuery(type: String, plan: ResourcePlan, after: String?, limit: Int, placeholders: SQLPlaceholders) throws -> SQLWhere {
        if case .conditional(let expression) = plan, let sources = narrowing(expression), !sources.isEmpty {
            var query = SQLWhere(sql: "", bindings: [])
            // One source: its arm is the list (in id order, cut at `limit + 1`), with no union to merge.
            if sources.count == 1 {
                try arm(sources[0], type: type, plan: plan, after: after, limit: limit, placeholders: placeholders, into: &query)
                return query
            }
            // SQLite (`?` placeholders) merges the arms of `UNION ... ORDER BY` as co-routines, each read in its index's
            // order and only as far as the outer LIMIT takes it, so its arms are written bare: cut and wrapped in a
            // subquery, each arm's rows were sorted again in a temporary b-tree (2x the instructions of every page).
            // PostgreSQL appends the arms and sorts, so there each arm is cut at `limit + 1` in its own subquery.
            let bare = placeholders == .questionMarks
            for (index, source) in sources.enumerated() {
                if index > 0 { query.sql += " UNION " }
                if !bare { query.sql += #"SELECT "id" FROM ("# }
                try arm(source, type: type, plan: plan, after: after, limit: bare ? nil : limit, placeholders: placeholders, into: &query)
                if !bare { query.sql += #") AS "arm\#(index)""# }
            }
            query.sql += #" ORDER BY "id" LIMIT "# + placeholders.mark(after: query.bindings.count)
            query.bindings.append(.int(limit + 1))
            return query
        }
        var query = SQLWhere(sql: #"SELECT "resource"."id" FROM "resource" WHERE "resource"."type" = "# + placeholders.mark(after: 0), bindings: [.text(type)])
        if let after {
            query.sql += #" AND "resource"."id" > "# + placeholders.mark(after: query.bindings.count)
            query.bindings.append(.text(after))
        }
        try appendPlan(plan, columns: planColumns, placeholders: placeholders, into: &query)
        query.sql += #" ORDER BY "resource"."id" LIMIT "# + placeholders.mark(after: query.bindings.count)
        query.bindings.append(.int(limit + 1))
        return query
    }

    /// Where the rows a plan may allow come from: the resources a user holds a membership of (with one of `roles`, nil
    /// for any), or the ones a user owns.
    package enum ListSource: Hashable, Sendable {
        case member(user: String, roles: [String]?)
        case owner(user: String)
    }

    /// Sources whose rows include every row on which `expression`'s SQL is TRUE, or nil when the plan cannot be narrowed
    /// (it may allow a resource the user neither owns nor is a member of). Empty: no row can be TRUE. Sound under SQL's
    /// three-valued logic: `owner is` is TRUE only on the user's owned rows, `role in` only on rows with the user's
    /// membership; an `and` is TRUE only where each part is, so any narrowed part will do; an `or` only where one part is,
    /// so every part must narrow. `not`, usage and residual conditions are left as filters.
    package static func narrowing(_ expression: PlanExpression) -> [ListSource]? {
        switch expression {
        case .ownerIsSubject(let subject, let field):
            return field.attribute == nil ? [.owner(user: subject)] : nil
        case .memberRole(let subject, let roles):
            if roles?.isEmpty == true { return [] }
            return [.member(user: subject, roles: roles)]
        case .and(let parts):
            // The narrowest part: the fewest sources, a membership with roles before any membership.
            return parts.compactMap(narrowing).min { weight($0) < weight($1) }
        case .or(let parts):
            var sources: [ListSource] = []
            for part in parts {
                guard let narrowed = narrowing(part) else { return nil }
                for source in narrowed { sources = merged(source, into: sources) }
            }
            return sources
        case .usageBelow, .condition, .not:
            return nil
        }
    }

    private static func weight(_ sources: [ListSource]) -> Int {
        sources.reduce(0) { total, source in
            if case .member(_, nil) = source { return total + 3 }
            return total + 2
        }
    }

    /// `source` added to `sources`: one membership source per user (the union of the roles, any role absorbing), one
    /// owner source per user.
    private static func merged(_ source: ListSource, into sources: [ListSource]) -> [ListSource] {
        guard case .member(let user, let roles) = source else { return sources.contains(source) ? sources : sources + [source] }
        var result = sources
        if let index = result.firstIndex(where: { if case .member(user, _) = $0 { true } else { false } }) {
            guard case .member(_, let earlier) = result[index] else { return result }
            let union: [String]? = if let earlier, let roles { Array(Set(earlier).union(roles)).sorted() } else { nil }
            result[index] = .member(user: user, roles: union)
        } else {
            result.append(source)
        }
        return result
    }

    /// One arm of a narrowed list: the source's rows of `type` after `after`, the plan as a filter, in id order, at most
    /// `limit + 1` (nil: unbounded and unordered here, for a union whose `ORDER BY` and LIMIT bound it). A membership
    /// arm walks one range of `membership(userId, resourceType, resourceId, role, resourceOwnerId)` (v22) in order,
    /// reading the type, the owner and the user's role from the membership row itself (no join to `resource`, no second
    /// probe of `membership`); an owner arm walks `resource(ownerId, id)` (v13), so neither sorts more than a page.
    private static func arm(
        _ source: ListSource, type: String, plan: ResourcePlan, after: String?, limit: Int?, placeholders: SQLPlaceholders, into query: inout SQLWhere
    ) throws {
        func bind(_ value: SQLValue) -> String {
            query.bindings.append(value)
            return placeholders.mark(after: query.bindings.count - 1)
        }
        var columns: PlanColumns
        let order: String
        switch source {
        case .member(let user, let roles):
            query.sql += #"SELECT "listed"."resourceId" AS "id" FROM "membership" AS "listed" WHERE "listed"."userId" = "# + bind(.text(user))
            query.sql += #" AND "listed"."resourceType" = "# + bind(.text(type))
            if let roles {
                query.sql += #" AND "listed"."role" IN ("# + roles.map { bind(.text($0)) }.joined(separator: ", ") + ")"
            }
            if let after { query.sql += #" AND "listed"."resourceId" > "# + bind(.text(after)) }
            columns = listedColumns
            columns.knownMemberRoles[user] = #""listed"."role""#
            order = #""listed"."resourceId""#
        case .owner(let user):
            query.sql += #"SELECT "resource"."id" FROM "resource" WHERE "resource"."ownerId" = "# + bind(.text(user))
            if let after { query.sql += #" AND "resource"."id" > "# + bind(.text(after)) }
            query.sql += #" AND "resource"."type" = "# + bind(.text(type))
            columns = planColumns
            order = #""resource"."id""#
        }
        try appendPlan(plan, columns: columns, placeholders: placeholders, into: &query)
        if let limit { query.sql += " ORDER BY \(order) LIMIT " + bind(.int(limit + 1)) }
    }

    /// ` AND (plan)`, its placeholders numbered after the query's bindings so far.
    private static func appendPlan(_ plan: ResourcePlan, columns: PlanColumns, placeholders: SQLPlaceholders, into query: inout SQLWhere) throws {
        let clause: SQLWhere
        do {
            let first: SQLPlaceholders
            switch placeholders {
            case .questionMarks: first = .questionMarks
            case .numbered(let start): first = .numbered(first: start + query.bindings.count)
            }
            clause = try plan.sqlWhere(columns, placeholders: first)
        } catch {
            throw IdentityError(.notListable, field: error.field, "the policy's plan for this list has no SQL form")
        }
        query.sql += " AND " + clause.sql
        query.bindings += clause.bindings
    }
}
