import Foundation
import Testing

@testable import Identity

/// The commit probe against a real file: this process's own writes, and its WAL checkpoints (which move
/// `PRAGMA data_version` for the probe's connection without a number), must never pass for another process's write:
/// each such look dropped every cached session and resource, several times a second while every decision was recorded.
@Suite struct SQLiteCommitProbeTests {
    @Test func theProbeTakesTheErasureCheckpointForThisProcesss() async throws {
        let (dir, store, probe) = try Self.opened()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(!probe.changedSinceLastLook())
        try await store.write { tx in try await tx.append(Self.event(0)) }
        #expect(!probe.changedSinceLastLook())
        try await store.flushErasures()
        #expect(!probe.changedSinceLastLook())
    }

    /// The writer's own automatic checkpoints, with a probe looking all the time from another thread (the race that
    /// shows them): no look may say another process wrote.
    @Test(.timeLimit(.minutes(3))) func theWritersCheckpointsNeverPassForAnotherProcesss() async throws {
        let (dir, store, probe) = try Self.opened()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = probe.changedSinceLastLook()
        let looking = Looking(probe)
        looking.start()
        // About 5 MB of audit rows in 40 commits: several checkpoints of 1,000 frames.
        for batch in 0..<40 {
            try await store.write { tx in
                for i in 0..<60 { try await tx.append(Self.event(batch * 60 + i)) }
            }
        }
        let (looks, foreign) = await looking.stop()
        #expect(looks > 0)
        #expect(foreign == 0, "\(foreign) of \(looks) looks took this process's own writes for another process's")
    }

    /// Decision records of many users, batch after batch, as `--decision-log all` writes them under load with many
    /// users signed in: their index entries spread over many pages, so the WAL fills and is checkpointed often. No
    /// look may say another process wrote (each such look drops every cached session).
    @Test(.timeLimit(.minutes(3))) func manyUsersDecisionBatchesNeverPassForAnotherProcesss() async throws {
        let (dir, store, probe) = try Self.opened()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = probe.changedSinceLastLook()
        let looking = Looking(probe)
        looking.start()
        for batch in 0..<150 {
            let rows = (0..<100).map { i in
                let user = (batch * 100 + i) % 1_000
                return DecisionLogRow(
                    id: nil, at: Date(timeIntervalSince1970: 1_800_000_000 + Double(batch)), actor: "p-\(user)", action: "view",
                    resourceType: "app", resourceId: nil, effect: "deny", reason: "requires_upgrade", policyHash: "h", policyLocation: nil,
                    subject: "u-\(String(user * 7919, radix: 16))", facts: String(repeating: "f", count: 300))
            }
            try await store.write { tx in try await tx.insertAll(rows) }
        }
        let (looks, foreign) = await looking.stop()
        #expect(looks > 0)
        #expect(foreign == 0, "\(foreign) of \(looks) looks took this process's own writes for another process's")
    }

    /// A fresh database in a folder of its own (the caller removes it), its store, and a probe on the file.
    static func opened() throws -> (folder: URL, store: SQLiteStore, probe: SQLiteCommitProbe) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-own-commits-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let database = try AppDatabase(path: dir.appendingPathComponent("identity.sqlite").path)
        return (dir, SQLiteStore(database), try SQLiteCommitProbe(path: database.pool.path, ownCommits: database.ownCommits))
    }

    static func event(_ i: Int) -> AuditEventRow {
        AuditEventRow(
            id: nil, at: Date(timeIntervalSince1970: 1_800_000_000 + Double(i)), kind: "pin", method: nil, outcome: "failure",
            reason: String(repeating: "x", count: 2_000), actor: "p-\(i % 7)")
    }

    /// A probe looking in a loop on a thread of its own (the probe is synchronous; the cooperative pool is not held).
    final class Looking: @unchecked Sendable {
        private let probe: SQLiteCommitProbe
        private let lock = NSLock()
        private var running = true
        private var finished = false
        private var waiting: CheckedContinuation<Void, Never>?
        private var looks = 0
        private var foreign = 0

        init(_ probe: SQLiteCommitProbe) { self.probe = probe }

        func start() {
            Thread.detachNewThread { [self] in
                while lock.withLock({ running }) {
                    let changed = probe.changedSinceLastLook()
                    lock.withLock {
                        looks += 1
                        if changed { foreign += 1 }
                    }
                }
                let resume = lock.withLock { () -> CheckedContinuation<Void, Never>? in
                    finished = true
                    defer { waiting = nil }
                    return waiting
                }
                resume?.resume()
            }
        }

        func stop() async -> (looks: Int, foreign: Int) {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = lock.withLock { () -> Bool in
                    running = false
                    if finished { return true }
                    waiting = c
                    return false
                }
                if now { c.resume() }
            }
            return lock.withLock { (looks, foreign) }
        }
    }
}
