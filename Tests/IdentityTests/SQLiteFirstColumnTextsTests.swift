import GRDB
import Testing

@testable import Identity

/// The list's ids are read through SQLite's C API (`SQLiteTransaction.firstColumnTexts`), not GRDB's
/// `String.fetchAll`: the same strings in the same order, a NULL refused as `String.fetchAll` refuses it, and the
/// cached statement usable again with other arguments.
@Suite struct SQLiteFirstColumnTextsTests {
    static let texts = ["", "p1", "é ü 日本 🚀", "quote \" backslash \\ tab \t", String(repeating: "x", count: 5_000)]

    static func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT)")
            for (n, text) in texts.enumerated() { try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [n, text]) }
            try db.execute(sql: "INSERT INTO t VALUES (100, NULL)")
        }
        return queue
    }

    @Test func theTextsAreFetchAllsInOrderAndTheStatementServesAgain() throws {
        try Self.database().read { db in
            let sql = "SELECT id FROM t WHERE n < ? ORDER BY n"
            for limit in [5, 2, 0, 5] {
                let statement = try db.cachedStatement(sql: sql)
                try statement.setArguments([limit])
                let read = try SQLiteTransaction.firstColumnTexts(statement, db)
                #expect(read == (try String.fetchAll(db, sql: sql, arguments: [limit])))
                #expect(read == Array(Self.texts.prefix(limit)))
            }
        }
    }

    @Test func aNullIsRefusedAsFetchAllRefusesIt() throws {
        try Self.database().read { db in
            let sql = "SELECT id FROM t ORDER BY n"
            #expect(throws: (any Error).self) { try String.fetchAll(db, sql: sql) }
            let statement = try db.cachedStatement(sql: sql)
            try statement.setArguments([])
            #expect(throws: DatabaseError.self) { try SQLiteTransaction.firstColumnTexts(statement, db) }
        }
    }
}
