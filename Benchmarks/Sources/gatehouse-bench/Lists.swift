// The lists section: every page of a user's 10,000 of 20,000 projects through the facade's `resources`, next to a plain
// SELECT of the same ids through the same pool (issue 41's lists row: facade <= 2x the SELECT at limit 1000).
import BenchFixtures
import CallgrindMarks
import Foundation
import GRDB
import Gatehouse
@_spi(Benchmarks) import Identity

/// The world of `Tests/GatehouseTests/ResourceListBenchmark.swift` and `scripts/list-http-load.py`: two PIN accounts on
/// research-crawler over SQLite in a temporary folder, 20,000 projects owned by `other`, `me` an editor of every other
/// one (10,000). The rows are written straight into the file, as the HTTP script does (v22's triggers fill the
/// membership rows' copies); their ids are fixed, so that callgrind's counts repeat.
struct ListWorld {
    let gate: GatehouseService
    let pool: DatabasePool
    let userId: String
    let token: String
    let folder: URL

    /// The `i`th project's id: `p` and six digits, then a fixed UUID-shaped tail (42 bytes, as the tests' ids).
    static func projectId(_ i: Int) -> String {
        let hash = UInt32(truncatingIfNeeded: UInt64(i) &* 2_654_435_761)
        return String(format: "p%06d-%08x-0000-4000-8000-%012d", i, hash, i)
    }

    static func make() async throws -> ListWorld {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-bench-lists-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["bench"]))
        configuration.pin = .unsafeForTesting(rounds: 1_000)  // registration only; not what is measured
        let database = try AppDatabase(path: folder.appendingPathComponent("lists.sqlite").path)
        let identity = IdentityService(
            store: SQLiteStore(database), configuration: configuration, jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))
        let gate = GatehouseService(policy: Fixtures.compiled("research-crawler"), identity: identity)
        let me = try await identity.register(username: "list_me", pin: "5820", source: .inProcess)
        let other = try await identity.register(username: "list_other", pin: "5820", source: .inProcess)
        let pool = database.benchmarkPool
        let (meId, otherId) = (me.userId, other.userId)
        try await pool.write { db in
            // The writer's page cache holds the whole seed, so pages are not spilled to the WAL one by one (300,000
            // writes, minutes under callgrind); set back after. The listings read on the reader connections.
            try db.execute(sql: "PRAGMA cache_size = -262144")
            defer { try? db.execute(sql: "PRAGMA cache_size = -2000") }
            let at = "2026-11-28 00:00:00.000"
            for i in 0..<20_000 {
                let id = projectId(i)
                try db.execute(
                    sql: "INSERT INTO resource (id, type, name, ownerId, createdAt) VALUES (?, 'project', 'P', ?, ?)", arguments: [id, otherId, at])
                try db.execute(sql: "INSERT INTO membership (resourceId, userId, role, joinedAt) VALUES (?, ?, 'owner', ?)", arguments: [id, otherId, at])
                if i % 2 == 0 {
                    try db.execute(sql: "INSERT INTO membership (resourceId, userId, role, joinedAt) VALUES (?, ?, 'editor', ?)", arguments: [id, meId, at])
                }
            }
        }
        return ListWorld(gate: gate, pool: pool, userId: meId, token: me.accessToken, folder: folder)
    }

    /// Every page of `me`'s projects through `GatehouseService.resources` at `limit`, following `nextCursor`.
    @inline(never)
    func listEveryPage(limit: Int) async throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        repeat {
            let page = try await gate.resources(token: token, type: "project", action: "view", cursor: cursor, limit: limit)
            ids += page.ids
            cursor = page.nextCursor
        } while cursor != nil
        return ids
    }

    /// The plain SELECT of the same ids, as `ResourceListBenchmark` runs it: one read of the store's pool.
    @inline(never)
    func plainSelect() async throws -> [String] {
        let userId = self.userId
        return try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId", arguments: [userId])
        }
    }

    /// The three listings, each checked to give the SELECT's 10,000 ids (which also warms the caches).
    func checked() async throws {
        let expected = try await plainSelect()
        guard expected.count == 10_000 else { fatalError("the plain SELECT found \(expected.count) ids, not 10,000") }
        for limit in [1000, 100] {
            let listed = try await listEveryPage(limit: limit)
            guard listed == expected else { fatalError("resources at limit \(limit) listed \(listed.count) ids, not the SELECT's") }
        }
    }
}

private func listMilliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15
}

/// `--section lists`: `rounds` interleaved rounds of the plain SELECT, every page at limit 1000 and every page at limit
/// 100; medians, and the ratios to the SELECT's median within the run.
func runListSection(rounds: Int) async throws {
    print("")
    print("Lists: every page of a user's 10,000 of 20,000 projects, GatehouseService.resources (research-crawler, view, SQLite),")
    print("against the plain SELECT of the same ids through the same pool; \(rounds) interleaved rounds, ids checked equal.")
    print("")
    let world = try await ListWorld.make()
    defer { try? FileManager.default.removeItem(at: world.folder) }
    try await world.checked()
    let clock = ContinuousClock()
    var select: [Double] = [], limit1000: [Double] = [], limit100: [Double] = []
    for _ in 0..<rounds {
        var start = clock.now
        _ = try await world.plainSelect()
        select.append(listMilliseconds(clock.now - start))
        start = clock.now
        _ = try await world.listEveryPage(limit: 1000)
        limit1000.append(listMilliseconds(clock.now - start))
        start = clock.now
        _ = try await world.listEveryPage(limit: 100)
        limit100.append(listMilliseconds(clock.now - start))
    }
    func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
    let base = median(select)
    print("| listing | median ms | min ms | max ms | / plain SELECT |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for (name, xs) in [("plain SELECT", select), ("resources, every page, limit 1000", limit1000), ("resources, every page, limit 100", limit100)] {
        print("| \(name) | \(String(format: "%.2f", median(xs))) | \(String(format: "%.2f", xs.min()!)) | \(String(format: "%.2f", xs.max()!)) | \(String(format: "%.2fx", median(xs) / base)) |")
    }
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    print("")
    print("load average: \(load)")
}

/// `--profile-lists ROUNDS`: the target of `scripts/callgrind-lists.py`. After the checks, each listing `rounds` times
/// between two callgrind dumps, the second labelled with its name, so each dump holds that listing's instructions on every
/// thread (the facade's task, GRDB's reader) and nothing of the set-up. Prints nothing timed.
func profileLists(rounds: Int) async throws {
    let world = try await ListWorld.make()
    defer { try? FileManager.default.removeItem(at: world.folder) }
    try await world.checked()
    // A dump rather than a zero: a dump writes the counters so far (the set-up, on every thread) and zeroes them all.
    callgrind_marks_dump("lists-setup")
    for _ in 0..<rounds { _ = try await world.plainSelect() }
    callgrind_marks_dump("lists-select")
    for _ in 0..<rounds { _ = try await world.listEveryPage(limit: 1000) }
    callgrind_marks_dump("lists-limit1000")
    for _ in 0..<rounds { _ = try await world.listEveryPage(limit: 100) }
    callgrind_marks_dump("lists-limit100")
    print("\(rounds) rounds of each listing\(callgrind_marks_running() != 0 ? " under valgrind" : "")")
}
