import Foundation
import PolicyModel

/// A row of an append-only log (`auditEvent`, `decisionLog`): an increasing id and a time.
package protocol LogRow: StoredRow {
    var id: Int64? { get }
    var at: Date { get }
}

extension AuditEventRow: LogRow {}
extension DecisionLogRow: LogRow {}

/// One page of a log, newest first: rows whose columns equal `equal`, with `at` in [`from`, `to`), and `id` below
/// `beforeId`; at most `limit`. Column names come from the identity layer, never from a caller.
package struct LogQuery: Sendable, Hashable {
    package var equal: [String: StoreValue] = [:]
    package var from: Date?
    package var to: Date?
    package var beforeId: Int64?
    package var limit: Int

    package init(equal: [String: StoreValue] = [:], from: Date? = nil, to: Date? = nil, beforeId: Int64? = nil, limit: Int) {
        self.equal = equal
        self.from = from
        self.to = to
        self.beforeId = beforeId
        self.limit = limit
    }

    /// The read it describes: the equal columns, then `at` in [`from`, `to`) and `id` below `beforeId`, newest
    /// first (`id` descending: the log's `at` and `id` indexes), at most `limit` rows.
    package func read<R: LogRow>(_ type: R.Type) -> StoreRead<R> {
        var read = StoreRead<R>.equal(equal)
        if let from { read.filter.append(.init(column: "at", comparison: .atLeast, value: .date(from))) }
        if let to { read.filter.append(.init(column: "at", comparison: .below, value: .date(to))) }
        if let beforeId { read.filter.append(.init(column: "id", comparison: .below, value: .int(Int(beforeId)))) }
        read.order = [.init(column: "id", descending: true)]
        read.limit = limit
        return read
    }
}

extension StoreRead where R: LogRow {
    /// Every row of the log whose actor is `pseudonym`, oldest first (the data export's).
    package static func byActor(_ pseudonym: String) -> StoreRead {
        StoreRead(filter: [.init(column: "actor", comparison: .equal, value: .text(pseudonym))], order: [.init(column: "id")])
    }
}

extension IdentityTransaction {
    /// `query`'s page of the log `type`: one `SELECT ... ORDER BY "id" DESC LIMIT n` on every store.
    package func fetchLog<R: LogRow>(_ type: R.Type, _ query: LogQuery) async throws -> [R] {
        try await fetch(query.read(type))
    }
}

/// What the operator's log reads filter by; nil matches anything.
public struct LogFilter: Sendable, Hashable {
    /// Rows at or after this time.
    public var from: Date?
    /// Rows before this time.
    public var to: Date?
    /// Rows about this user (decision records: the subject; audit events: the actor).
    public var userId: String?
    /// Decision records of this action.
    public var action: String?
    /// Decision records of this resource type.
    public var resourceType: String?
    /// Decision records with this effect (`allow`, `deny`).
    public var decision: String?
    /// Decision records with this reason; audit events with this reason.
    public var reason: String?
    /// Audit events of this kind (`sign_in`, `pin_lockout`, ...).
    public var kind: String?
    /// Audit events with this outcome (`success`, `failure`, `pending`).
    public var outcome: String?

    /// No filter.
    public init() {}
}

/// A page of a log read: its rows, newest first, and the cursor of the next page (nil on the last).
package struct LogPage<R: LogRow>: Sendable {
    package var rows: [R]
    package var next: String?
}

extension IdentityService {
    /// The most rows one page of an operator's log read holds.
    public static let maxLogPage = 1_000

    /// The cursor after `id`: opaque to a caller, `c` and the id in base64url.
    package static func logCursor(after id: Int64) -> String { SecretCoding.base64URL(Array("c\(id)".utf8)) }

    /// The id a cursor stands for; throws naming `cursor` for anything `logCursor` did not write.
    package static func logCursorId(_ cursor: String) throws(IdentityError) -> Int64 {
        guard let bytes = SecretCoding.fromBase64URL(cursor), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("c"),
            let id = Int64(text.dropFirst()), id > 0
        else { throw IdentityError.invalid("cursor", "is not a cursor this server gave") }
        return id
    }

    /// A page of the decision log for the operator: newest first, filtered, after `cursor`.
    package func decisionRecords(
        _ filter: LogFilter, cursor: String?, limit: Int, operator credential: OperatorCredential
    ) async throws -> LogPage<DecisionLogRow> {
        try authorizeOperator(credential)
        var query = LogQuery(from: filter.from, to: filter.to, beforeId: try cursor.map(Self.logCursorId), limit: try Self.pageLimit(limit))
        if let userId = filter.userId { query.equal["subject"] = .text(try await decisionPseudonyms().pseudonym(userId)) }
        if let action = filter.action { query.equal["action"] = .text(action) }
        if let type = filter.resourceType { query.equal["resourceType"] = .text(type) }
        if let effect = filter.decision {
            guard ["allow", "deny"].contains(effect) else { throw IdentityError.invalid("decision", "must be allow or deny") }
            query.equal["effect"] = .text(effect)
        }
        if let reason = filter.reason { query.equal["reason"] = .text(reason) }
        let q = query
        let rows = try await store.read { tx in try await tx.fetchLog(DecisionLogRow.self, q) }
        return LogPage(rows: rows, next: rows.count == query.limit ? rows.last?.id.map(Self.logCursor(after:)) : nil)
    }

    /// A page of the audit log for the operator: newest first, filtered, after `cursor`.
    package func auditEvents(_ filter: LogFilter, cursor: String?, limit: Int, operator credential: OperatorCredential) async throws -> LogPage<AuditEventRow> {
        try authorizeOperator(credential)
        var query = LogQuery(from: filter.from, to: filter.to, beforeId: try cursor.map(Self.logCursorId), limit: try Self.pageLimit(limit))
        if let kind = filter.kind { query.equal["kind"] = .text(kind) }
        if let outcome = filter.outcome { query.equal["outcome"] = .text(outcome) }
        if let reason = filter.reason { query.equal["reason"] = .text(reason) }
        let q = query
        let userId = filter.userId
        let rows = try await store.read { tx -> [AuditEventRow] in
            var query = q
            if let userId {
                // A user the store does not know has no events (an erased one's rows carry random pseudonyms).
                guard let user = try await tx.fetchOne(UserRow.self, "id", .text(userId)) else { return [] }
                query.equal["actor"] = .text(user.pseudonym)
            }
            return try await tx.fetchLog(AuditEventRow.self, query)
        }
        return LogPage(rows: rows, next: rows.count == query.limit ? rows.last?.id.map(Self.logCursor(after:)) : nil)
    }

    static func pageLimit(_ limit: Int) throws(IdentityError) -> Int {
        guard (1...maxLogPage).contains(limit) else { throw IdentityError.invalid("limit", "must be 1 to \(maxLogPage)") }
        return limit
    }
}
