import Foundation
import PolicyEngine

/// A read of the store, described once as a value: the table it selects from and how a row decodes (the row type's,
/// `R.table` and `Decodable`), its filter, its order and its limit. Every store runs any such read the same way
/// (`IdentityTransaction.fetch`: the statement `sql(placeholders:)` writes, its rows decoded as `R`), so a new kind
/// of read (a paged log, a filtered list) is a new description and its tests, not a new method on the store
/// protocol, the SQLite store, the PostgreSQL transaction and every decorator. GRDB's `FetchRequest` is the model.
///
/// Column names come from the identity layer, never from a caller; values are always bound.
package struct StoreRead<R: StoredRow>: Sendable, Hashable {
    /// How a filter term compares its column with its value.
    package enum Comparison: String, Sendable, Hashable {
        case equal = "="
        case atLeast = ">="
        case below = "<"
        /// The column equals one of the term's values (`IN`): many keys in one statement.
        case oneOf = "IN"
    }

    /// One term of the filter: `column comparison value` (`column IN (values...)` for `oneOf`); the terms are joined
    /// with `AND`.
    package struct Term: Sendable, Hashable {
        package var column: String
        package var comparison: Comparison
        /// The value compared with: one, or for `oneOf` every value the column may equal (none: no row).
        package var values: [StoreValue]

        package init(column: String, comparison: Comparison, value: StoreValue) {
            self.column = column
            self.comparison = comparison
            self.values = [value]
        }

        /// `column IN (values...)`.
        package init(column: String, oneOf values: [StoreValue]) {
            self.column = column
            self.comparison = .oneOf
            self.values = values
        }
    }

    /// One key of the order: a column, ascending or descending.
    package struct Order: Sendable, Hashable {
        package var column: String
        package var descending = false
    }

    /// The rows it keeps; none: every row.
    package var filter: [Term]
    /// The order rows come in; none: the store's.
    package var order: [Order]
    /// At most this many rows; nil: all.
    package var limit: Int?

    package init(filter: [Term] = [], order: [Order] = [], limit: Int? = nil) {
        self.filter = filter
        self.order = order
        self.limit = limit
    }

    /// The rows whose columns equal `equal` (written in column order, so one read is one SQL text).
    package static func equal(_ equal: [String: StoreValue]) -> StoreRead {
        StoreRead(filter: equal.keys.sorted().map { Term(column: $0, comparison: .equal, value: equal[$0]!) })
    }

    /// The statement and the values to bind in order, placeholders as `placeholders` writes them.
    package func sql(placeholders: SQLPlaceholders) -> (sql: String, values: [StoreValue]) {
        var values: [StoreValue] = []
        var sql = "SELECT * FROM \"\(R.table)\""
        var terms: [String] = []
        for term in filter {
            guard term.comparison == .oneOf else {
                terms.append("\"\(term.column)\" \(term.comparison.rawValue) \(placeholders.mark(after: values.count))")
                values.append(contentsOf: term.values)
                continue
            }
            guard !term.values.isEmpty else {
                terms.append("FALSE")
                continue
            }
            let marks = term.values.indices.map { placeholders.mark(after: values.count + $0) }
            terms.append("\"\(term.column)\" IN (\(marks.joined(separator: ", ")))")
            values.append(contentsOf: term.values)
        }
        if !terms.isEmpty { sql += " WHERE " + terms.joined(separator: " AND ") }
        if !order.isEmpty {
            sql += " ORDER BY " + order.map { "\"\($0.column)\"" + ($0.descending ? " DESC" : "") }.joined(separator: ", ")
        }
        if let limit {
            sql += " LIMIT \(placeholders.mark(after: values.count))"
            values.append(.int(limit))
        }
        return (sql, values)
    }
}
