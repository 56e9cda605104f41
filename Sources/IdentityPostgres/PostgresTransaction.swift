import Foundation
import Identity
import Logging
import PolicyEngine
import PostgresNIO

/// The store's operations inside one PostgreSQL transaction. Every value is a bind parameter;
/// only table and column names (from the code) are written into the SQL text.
struct PostgresTransaction: IdentityTransaction {
    let connection: PostgresConnection
    let logger: Logger
    /// The channel the store's fact changes go out on (`PostgresStore.factChannel`).
    let factChannel: String
    /// This run's deferred actions; a run that a serialization failure ends drops them with it.
    let actions: AfterCommitActions
    /// The store's count of statements sent.
    let roundTrips: RoundTripCounter

    fileprivate func rows(_ sql: String, _ binds: PostgresBindings) async throws -> [PostgresRow] {
        roundTrips.add()
        return try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).collect()
    }

    /// ` WHERE "a" = $n AND ...` for `conditions`, in key order, binds appended to `binds`.
    fileprivate func whereClause(_ conditions: [String: StoreValue], _ binds: inout PostgresBindings) -> String {
        guard !conditions.isEmpty else { return "" }
        var terms: [String] = []
        for key in conditions.keys.sorted() {
            Self.bind(conditions[key]!, &binds)
            terms.append("\(quoted(key)) = $\(binds.count)")
        }
        return " WHERE " + terms.joined(separator: " AND ")
    }

    /// Binds `value` after the bindings already in `binds`.
    private static func bind(_ value: StoreValue, _ binds: inout PostgresBindings) {
        switch value {
        case .text(let s): binds.append(s)
        case .blob(let d): binds.append(ByteBuffer(bytes: d))
        case .int(let i): binds.append(i)
        case .date(let d): binds.append(d)
        }
    }

    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] {
        let (sql, values) = read.sql(placeholders: .numbered(first: 1))
        var binds = PostgresBindings()
        for value in values { Self.bind(value, &binds) }
        return try await rows(sql, binds).map { try RowDecoding.decode(R.self, $0) }
    }

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        var binds = PostgresBindings()
        let clause = whereClause(conditions, &binds)
        return try await rows("SELECT * FROM \(quoted(R.table))\(clause) LIMIT 1", binds).first.map { try RowDecoding.decode(R.self, $0) }
    }

    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] {
        var binds = PostgresBindings()
        let clause = whereClause(conditions, &binds)
        return try await rows("SELECT * FROM \(quoted(R.table))\(clause)", binds).map { try RowDecoding.decode(R.self, $0) }
    }

    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        var binds = PostgresBindings()
        let clause = whereClause(conditions, &binds)
        let columns = R.columns.map(quoted).joined(separator: ", ")
        return try await rows("SELECT \(columns) FROM \(quoted(R.table))\(clause) LIMIT 1", binds).first.map { try RowDecoding.decode(R.self, $0) }
    }

    func insert<R: StoredRow>(_ row: R) async throws {
        _ = try await insert(row, onConflict: "")
    }

    func upsert<R: StoredRow>(_ row: R) async throws {
        let columns = try RowEncoding.columns(of: row)
        let keys = Set(R.primaryKey)
        let others = columns.map(\.name).filter { !keys.contains($0) }
        let action =
            others.isEmpty
            ? "DO NOTHING"
            : "DO UPDATE SET " + others.map { "\(quoted($0)) = EXCLUDED.\(quoted($0))" }.joined(separator: ", ")
        _ = try await insert(row, onConflict: " ON CONFLICT (\(R.primaryKey.map(quoted).joined(separator: ", "))) \(action)")
    }

    private func insert<R: StoredRow>(_ row: R, onConflict: String) async throws -> [PostgresRow] {
        // A nil primary key (the logs' identity ids) is left for the database to assign.
        let columns = try RowEncoding.columns(of: row).filter { !($0.value.isNull && R.primaryKey.contains($0.name)) }
        var binds = PostgresBindings()
        for column in columns { column.value.bind(into: &binds) }
        let names = columns.map { quoted($0.name) }.joined(separator: ", ")
        let params = (0..<columns.count).map { "$\($0 + 1)" }.joined(separator: ", ")
        return try await rows("INSERT INTO \(quoted(R.table)) (\(names)) VALUES (\(params))\(onConflict)", binds)
    }

    func update<R: StoredRow>(_ row: R) async throws {
        let columns = try RowEncoding.columns(of: row)
        let keys = Set(R.primaryKey)
        var binds = PostgresBindings()
        var sets: [String] = []
        for column in columns where !keys.contains(column.name) {
            column.value.bind(into: &binds)
            sets.append("\(quoted(column.name)) = $\(binds.count)")
        }
        var terms: [String] = []
        for key in R.primaryKey {
            guard let column = columns.first(where: { $0.name == key }) else { throw RowCodingError.missingKey(key) }
            column.value.bind(into: &binds)
            terms.append("\(quoted(key)) = $\(binds.count)")
        }
        let updated = try await rows(
            "UPDATE \(quoted(R.table)) SET \(sets.joined(separator: ", ")) WHERE \(terms.joined(separator: " AND ")) RETURNING 1", binds)
        guard !updated.isEmpty else { throw IdentityError(.storage, field: "database", "no row to update") }
    }

    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int {
        precondition(!conditions.isEmpty, "deleteAll needs at least one condition")
        var binds = PostgresBindings()
        let clause = whereClause(conditions, &binds)
        return try await rows("DELETE FROM \(quoted(R.table))\(clause) RETURNING 1", binds).count
    }

    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int {
        var binds = PostgresBindings()
        binds.append(date)
        return try await rows("DELETE FROM \(quoted(R.table)) WHERE \(quoted(column)) < $1 RETURNING 1", binds).count
    }

    var placeholders: SQLPlaceholders { .numbered(first: 1) }

    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] {
        var binds = PostgresBindings()
        for value in bindings {
            switch value {
            case .text(let s): binds.append(s)
            case .int(let i): binds.append(i)
            case .double(let d): binds.append(d)
            case .bool(let b): binds.append(b)
            }
        }
        return try await rows(sql, binds).map { try $0.decode(String.self) }
    }

    func append(_ event: AuditEventRow) async throws {
        var event = event
        event.id = nil
        try await insert(event)
    }

    func erase(actor pseudonym: String) async throws -> Int {
        var binds = PostgresBindings()
        binds.append(pseudonym)
        _ = try await rows(#"INSERT INTO "erasure" ("pseudonym") VALUES ($1)"#, binds)
        // gen_random_uuid() draws from the server's strong random source, once per row.
        let audit = try await rows(
            #"UPDATE "auditEvent" SET "actor" = 'erased-' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), "attempt" = NULL WHERE "actor" = $1 RETURNING 1"#,
            binds)
        let decisions = try await rows(
            #"UPDATE "decisionLog" SET "actor" = 'erased-' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), "resourceId" = NULL, "subject" = NULL, "facts" = NULL WHERE "actor" = $1 RETURNING 1"#,
            binds)
        _ = try await rows(#"DELETE FROM "erasure" WHERE "pseudonym" = $1"#, binds)
        return audit.count + decisions.count
    }

    func afterCommit(_ action: @escaping @Sendable () -> Void) {
        actions.add(action)
    }

    /// `NOTIFY` the store's channel, in this transaction, with the facts it changes: delivered to every listening
    /// replica when (and only if) the transaction commits.
    func announce(_ changes: Set<FactChange>) async throws {
        var binds = PostgresBindings()
        binds.append(factChannel)
        binds.append(FactChange.encode(changes))
        _ = try await rows("SELECT pg_notify($1, $2)", binds)
    }
}

extension PostgresTransaction: BatchInserting {
    /// Rows with the same columns in one multi-row `INSERT` (one round trip per group, at most 500 rows each), not one
    /// statement per row: a batch of decision records is one or two round trips.
    func insertBatch<R: StoredRow>(_ batch: [R]) async throws {
        if let records = batch as? [DecisionLogRow], records.allSatisfy({ $0.id == nil }) {
            try await insertDecisionRecords(records)
            return
        }
        var groups: [[String]: [[ColumnValue]]] = [:]
        var order: [[String]] = []
        for row in batch {
            let columns = try RowEncoding.columns(of: row).filter { !($0.value.isNull && R.primaryKey.contains($0.name)) }
            let names = columns.map(\.name)
            if groups[names] == nil { order.append(names) }
            groups[names, default: []].append(columns.map(\.value))
        }
        for names in order {
            let all = groups[names]!
            var start = 0
            while start < all.count {
                let chunk = all[start..<min(all.count, start + 500)]
                var binds = PostgresBindings()
                var tuples: [String] = []
                for values in chunk {
                    var params: [String] = []
                    for value in values {
                        value.bind(into: &binds)
                        params.append("$\(binds.count)")
                    }
                    tuples.append("(" + params.joined(separator: ", ") + ")")
                }
                let columns = names.map { quoted($0) }.joined(separator: ", ")
                _ = try await rows("INSERT INTO \(quoted(R.table)) (\(columns)) VALUES " + tuples.joined(separator: ", "), binds)
                start += chunk.count
            }
        }
    }

    /// The decision log's batch through `COPY "decisionLog" (...) FROM STDIN` in the text form (`PostgresCopyRows`):
    /// PostgreSQL inserts the rows into the table in groups (one WAL record a group, not a row) and parses no statement
    /// per batch, and the server builds no row through `Codable` and binds no parameter. What a record costs when every
    /// decision is recorded (docs/performance.md, "Recording decisions").
    private func insertDecisionRecords(_ records: [DecisionLogRow]) async throws {
        guard !records.isEmpty else { return }
        var rows = PostgresCopyRows(capacity: records.count * 512)
        for row in records {
            rows.timestamp(row.at, first: true)
            rows.text(row.actor)
            rows.text(row.action)
            rows.text(row.resourceType)
            rows.text(row.resourceId)
            rows.text(row.effect)
            rows.text(row.reason)
            rows.text(row.policyHash)
            rows.text(row.policyLocation)
            rows.text(row.subject)
            rows.text(row.facts)
            rows.endRow()
        }
        roundTrips.add()
        try await connection.copyFrom(table: "decisionLog", columns: Self.decisionRecordColumns, logger: logger) { writer in
            try await writer.write(rows.buffer)
        }
    }

    private static let decisionRecordColumns = [
        "at", "actor", "action", "resourceType", "resourceId", "effect", "reason", "policyHash", "policyLocation", "subject", "facts",
    ]
}
