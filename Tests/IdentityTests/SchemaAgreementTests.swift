import Foundation
import GRDB
import PostgresNIO
import Testing

@testable import Identity
@testable import IdentityPostgres

/// The schema is stated three times: SQLite's migrations, PostgreSQL's migrations, and the Swift row types. This
/// checks they agree: the same tables, each with the same columns in both stores, and every row type's stored
/// properties are exactly its table's columns (a row type with a field the table lacks fails at the first write;
/// a column no row type has is data the code can neither read nor export).
@Suite(.storeScope) struct SchemaAgreementTests {
    /// Every row type the stores read and write.
    static let rows: [any StoredRow.Type] = [
        UserRow.self, AppRoleRow.self, AppleIdentityRow.self, AppleNonceRow.self, PINCredentialRow.self, PrivacySettingsRow.self,
        SubscriptionRow.self, AppStoreTransactionRow.self, AppStoreLedgerRow.self, AppStoreNotificationSeenRow.self, AppAccountTokenRow.self, SessionRow.self, RefreshTokenRow.self,
        DeviceKeyRow.self, DeviceChallengeRow.self, ResourceRow.self, MembershipRow.self, ShareCodeRow.self, GuessLimitRow.self,
        PINThrottleRow.self, UserUsageCounterRow.self, UsageCounterRow.self, AuditEventRow.self, LogRetentionRow.self,
        DecisionLogRow.self, DecisionKeyRow.self,
    ]

    /// Tables no row type maps: each store's migration bookkeeping (GRDB's, `gatehouseMigration`), and `erasure`,
    /// the queue of erased pseudonyms the stores reach by SQL (`flushErasures`). The two stores must still agree on it.
    static func isBookkeeping(_ table: String) -> Bool {
        table.hasPrefix("grdb_") || table.hasPrefix("sqlite_") || table == "gatehouseMigration"
    }
    static let unmapped: Set<String> = ["erasure"]

    func sqliteColumns() throws -> [String: Set<String>] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-schema-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let database = try AppDatabase(path: path)
        return try database.pool.read { db in
            var result: [String: Set<String>] = [:]
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
                result[table] = Set(try Row.fetchAll(db, sql: "PRAGMA table_info(\"\(table)\")").map { $0["name"] as String })
            }
            return result
        }
    }

    @Test func everyRowTypeIsItsTablesColumnsOnSQLite() throws {
        let tables = try sqliteColumns()
        let mapped = Set(Self.rows.map { $0.table })
        for table in tables.keys.sorted() where !Self.isBookkeeping(table) && !Self.unmapped.contains(table) {
            #expect(mapped.contains(table), "SQLite table '\(table)' has no row type")
        }
        for row in Self.rows {
            let columns = try #require(tables[row.table], "\(row) names table '\(row.table)', which SQLite's migrations do not create")
            let fields = try ColumnNames.of(row)
            #expect(fields == columns, "\(row): fields \(fields.subtracting(columns).sorted()) not columns; columns \(columns.subtracting(fields).sorted()) not fields")
        }
    }

    /// A column selection names exactly the columns it decodes, each a column of its table: a field left out of
    /// `columns` would fail every read, a name that is no column every statement.
    @Test func everyColumnSelectionNamesItsFieldsAndTheyAreItsTablesColumns() throws {
        let tables = try sqliteColumns()
        let selections: [any ColumnSelection.Type] = [DecisionSession.self]
        for selection in selections {
            #expect(Set(selection.columns) == (try ColumnNames.of(selection)) && selection.columns.count == Set(selection.columns).count, "\(selection)")
            #expect(Set(selection.columns).isSubset(of: tables[selection.table] ?? []), "\(selection): not columns of '\(selection.table)'")
        }
        // What a decision leaves in the database.
        #expect(Set(DecisionSession.columns).isDisjoint(with: ["accessTokenHash", "previousAccessTokenHash", "refreshKey"]))
    }

    @Test(.enabled(if: TestPostgres.url != nil, "GATEHOUSE_TEST_POSTGRES_URL is not set"))
    func postgresHasTheSameTablesAndColumnsAsSQLite() async throws {
        let sqlite = try sqliteColumns().filter { !Self.isBookkeeping($0.key) }
        let schema = TestPostgres.newSchemaName()
        let store = try await TestPostgres.makeStore(schema: schema)
        var postgres: [String: Set<String>] = [:]
        let rows = try await store.client.query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = \(schema)", logger: TestPostgres.quietLogger)
        for try await (table, column) in rows.decode((String, String).self) where !Self.isBookkeeping(table) {
            postgres[table, default: []].insert(column)
        }
        #expect(Set(postgres.keys) == Set(sqlite.keys), "tables only in PostgreSQL: \(Set(postgres.keys).subtracting(sqlite.keys).sorted()); only in SQLite: \(Set(sqlite.keys).subtracting(postgres.keys).sorted())")
        for (table, columns) in sqlite {
            #expect(postgres[table] == columns, "\(table): only in PostgreSQL \(postgres[table, default: []].subtracting(columns).sorted()); only in SQLite \(columns.subtracting(postgres[table, default: []]).sorted())")
        }
    }
}

/// The coding keys a `Decodable` type asks for, found by decoding it from a decoder that answers every key with a
/// placeholder and writes the key down: the columns a row type reads and writes, with no instance needed.
enum ColumnNames {
    static func of(_ type: any Decodable.Type) throws -> Set<String> {
        let recorder = Recorder()
        _ = try type.init(from: KeyRecordingDecoder(recorder: recorder))
        return recorder.keys
    }

    final class Recorder { var keys: Set<String> = [] }

    struct KeyRecordingDecoder: Decoder {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]
        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(recorder: recorder))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "rows are flat")) }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single() }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] = []
        func contains(_ key: Key) -> Bool { recorder.keys.insert(key.stringValue); return true }
        func decodeNil(forKey key: Key) throws -> Bool { recorder.keys.insert(key.stringValue); return false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            recorder.keys.insert(key.stringValue)
            return try T(from: Placeholder())
        }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            throw DecodingError.typeMismatch(N.self, .init(codingPath: [], debugDescription: "rows are flat"))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "rows are flat"))
        }
        func superDecoder() throws -> any Decoder { Placeholder() }
        func superDecoder(forKey key: Key) throws -> any Decoder { Placeholder() }
    }

    /// A decoder whose single value is a placeholder of any scalar type a row holds.
    struct Placeholder: Decoder {
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]
        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw DecodingError.typeMismatch(Key.self, .init(codingPath: [], debugDescription: "rows are flat"))
        }
        /// An empty list: `Data` and `[String]` decode from it.
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Empty() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single() }
    }

    struct Empty: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] = []
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex = 0
        mutating func decodeNil() throws -> Bool { true }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: [], debugDescription: "empty"))
        }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
            throw DecodingError.valueNotFound(N.self, .init(codingPath: [], debugDescription: "empty"))
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { Empty() }
        mutating func superDecoder() throws -> any Decoder { Placeholder() }
    }

    struct Single: SingleValueDecodingContainer {
        var codingPath: [any CodingKey] = []
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "" }
        func decode(_ type: Double.Type) throws -> Double { 0 }
        func decode(_ type: Float.Type) throws -> Float { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int8.Type) throws -> Int8 { 0 }
        func decode(_ type: Int16.Type) throws -> Int16 { 0 }
        func decode(_ type: Int32.Type) throws -> Int32 { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode(_ type: UInt.Type) throws -> UInt { 0 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: Placeholder()) }
    }
}
