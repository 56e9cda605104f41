import Foundation
import PolicyEngine
import Synchronization

/// A decision fact a committed write changed, as a cache of decision facts keys it.
public enum FactChange: Sendable, Hashable {
    /// A user's sessions, tier, roles, privacy settings or own usage counters.
    case user(String)
    /// A resource's type, owner, members or usage counters (or whether it exists).
    case resource(String)
    /// A write whose facts cannot be named one by one (a bulk delete, an account deletion that cascades to the
    /// resources it owned): every cached fact is dropped.
    case everything
}

/// Tells its subscribers of every committed write that changed a decision fact: in the writing process after
/// `COMMIT` and before the write returns to its caller (`IdentityTransaction.afterCommit`), so that a decision that
/// starts after a write is acknowledged never sees what the write replaced. Every write of `IdentityService` goes
/// through it: its store is wrapped in a recorder (`FactRecordingStore`) that names the facts each row written
/// belongs to, so no flow has to remember to say what it changed.
public final class FactChanges: Sendable {
    private let subscribers = Mutex<[@Sendable (Set<FactChange>) -> Void]>([])
    /// Whether other processes' writes are heard: nil when no other process writes the store (SQLite), else whether
    /// the relay (PostgreSQL's `LISTEN` connection) is up now.
    private let othersHeard = Mutex<Bool?>(nil)

    /// How long a cached fact may be trusted while other processes' writes are not heard (the relay is down, or not
    /// yet up): the documented staleness bound.
    public static let stalenessBound: Duration = .seconds(1)

    package init() {}

    /// Whether the writes of other processes sharing the store are heard now: true for a store only this process
    /// writes, or one whose other writers it can see (SQLite), else whether the relay is up. While false, cached
    /// facts are trusted for `stalenessBound` only.
    public var heardFromOthers: Bool { othersHeard.withLock { $0 ?? true } }

    /// For a store other processes may write without telling (a SQLite file several servers share): whether any
    /// commit happened since the last look. Nil for a store that tells (PostgreSQL) or none.
    private let probe = Mutex<Probe?>(nil)

    /// The probe in a struct: a bare closure kept in a `Mutex` is re-thunked on every `withLock` (its `inout` value is
    /// reabstracted on the way in and written back wrapped on the way out), so each look grew a longer chain of thunks.
    private struct Probe {
        let changedSinceLastLook: @Sendable () -> Bool
    }

    /// Looks for other processes' writes this process can only see by looking (SQLite), telling subscribers
    /// `.everything` when there were any; then answers `heardFromOthers`. A cache calls it before it trusts an entry.
    public func catchUp() -> Bool {
        if let probe = probe.withLock({ $0 }), probe.changedSinceLastLook() { publish([.everything]) }
        return heardFromOthers
    }

    /// Watches a store other processes may write through `changedSinceLastLook` (`catchUp` calls it).
    package func watch(_ changedSinceLastLook: @escaping @Sendable () -> Bool) {
        probe.withLock { $0 = Probe(changedSinceLastLook: changedSinceLastLook) }
    }

    /// Whether other processes write this store at all (a relay was attached).
    public var sharedWithOthers: Bool { othersHeard.withLock { $0 != nil } }

    /// The relay's state: attached and down (`false`) until it first connects; on every connect every subscriber is
    /// told `.everything`, since what others wrote while it was down was not heard.
    package func relay(up: Bool) {
        let cameUp = othersHeard.withLock { heard -> Bool in
            defer { heard = up }
            return up && heard != true
        }
        if cameUp { publish([.everything]) }
    }

    /// Calls `handler` with the facts of every committed write from now on (and of every notification from another
    /// replica the store relays). `handler` runs on the writer's task and must be quick.
    public func subscribe(_ handler: @escaping @Sendable (Set<FactChange>) -> Void) {
        subscribers.withLock { $0.append(handler) }
    }

    /// Tells every subscriber that `changes` happened.
    package func publish(_ changes: Set<FactChange>) {
        guard !changes.isEmpty else { return }
        for handler in subscribers.withLock({ $0 }) { handler(changes) }
    }
}

/// The decision facts a row of a table belongs to; tables whose rows feed no decision name none.
package protocol DecisionFactRow: StoredRow {
    /// The facts this row is part of.
    var facts: [FactChange] { get }
    /// The facts the rows matching `conditions` (a delete's) are part of.
    static func facts(matching conditions: [String: StoreValue]) -> [FactChange]
}

extension DecisionFactRow {
    /// A delete by `userId` or `resourceId` names its user or resource; any other is every fact.
    package static func facts(matching conditions: [String: StoreValue]) -> [FactChange] {
        if case .text(let user)? = conditions["userId"] { return [.user(user)] }
        if case .text(let resource)? = conditions["resourceId"] { return [.resource(resource)] }
        return [.everything]
    }
}

extension SessionRow: DecisionFactRow { package var facts: [FactChange] { [.user(userId)] } }
extension SubscriptionRow: DecisionFactRow { package var facts: [FactChange] { [.user(userId)] } }
extension AppRoleRow: DecisionFactRow { package var facts: [FactChange] { [.user(userId)] } }
extension PrivacySettingsRow: DecisionFactRow { package var facts: [FactChange] { [.user(userId)] } }
extension UserUsageCounterRow: DecisionFactRow { package var facts: [FactChange] { [.user(userId)] } }
extension UsageCounterRow: DecisionFactRow { package var facts: [FactChange] { [.resource(resourceId)] } }
extension MembershipRow: DecisionFactRow { package var facts: [FactChange] { [.resource(resourceId)] } }

extension ResourceRow: DecisionFactRow {
    package var facts: [FactChange] { [.resource(id)] }
    /// A resource deleted by id names it; the database cascades to its members and counters, which are its facts.
    package static func facts(matching conditions: [String: StoreValue]) -> [FactChange] {
        if case .text(let id)? = conditions["id"] { return [.resource(id)] }
        return [.everything]
    }
}

extension UserRow: DecisionFactRow {
    package var facts: [FactChange] { [.user(id)] }
    /// Deleting a user cascades to the resources it owns and to its memberships: every fact.
    package static func facts(matching conditions: [String: StoreValue]) -> [FactChange] { [.everything] }
}

/// A transaction that passes every operation on and notes the decision facts each write touches.
final class FactRecordingTransaction: IdentityTransaction, BatchInserting {
    func insertBatch<R: StoredRow>(_ rows: [R]) async throws {
        for row in rows { note(row) }
        try await base.insertAll(rows)
    }

    let base: any IdentityTransaction
    let changed = Mutex<Set<FactChange>>([])

    init(base: any IdentityTransaction) { self.base = base }

    private func note<R: StoredRow>(_ row: R) {
        guard let row = row as? any DecisionFactRow else { return }
        let facts = row.facts
        changed.withLock { $0.formUnion(facts) }
    }

    private func note<R: StoredRow>(_ type: R.Type, matching conditions: [String: StoreValue]?) {
        guard let type = type as? any DecisionFactRow.Type else { return }
        let facts = conditions.map { type.facts(matching: $0) } ?? [.everything]
        changed.withLock { $0.formUnion(facts) }
    }

    func fetchOne<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? { try await base.fetchOne(type, conditions) }
    func fetchAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> [R] { try await base.fetchAll(type, conditions) }
    func fetchSelected<R: ColumnSelection>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> R? {
        try await base.fetchSelected(type, conditions)
    }
    func fetch<R: StoredRow>(_ read: StoreRead<R>) async throws -> [R] { try await base.fetch(read) }
    func insert<R: StoredRow>(_ row: R) async throws {
        note(row)
        try await base.insert(row)
    }
    func update<R: StoredRow>(_ row: R) async throws {
        note(row)
        try await base.update(row)
    }
    func upsert<R: StoredRow>(_ row: R) async throws {
        note(row)
        try await base.upsert(row)
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ conditions: [String: StoreValue]) async throws -> Int {
        note(type, matching: conditions)
        return try await base.deleteAll(type, conditions)
    }
    func deleteAll<R: StoredRow>(_ type: R.Type, _ column: String, before date: Date) async throws -> Int {
        note(type, matching: nil)
        return try await base.deleteAll(type, column, before: date)
    }
    var placeholders: SQLPlaceholders { base.placeholders }
    func fetchIds(_ sql: String, _ bindings: [SQLValue]) async throws -> [String] { try await base.fetchIds(sql, bindings) }
    func append(_ event: AuditEventRow) async throws { try await base.append(event) }
    func erase(actor pseudonym: String) async throws -> Int { try await base.erase(actor: pseudonym) }
    func afterCommit(_ action: @escaping @Sendable () -> Void) { base.afterCommit(action) }
    func announce(_ changes: Set<FactChange>) async throws { try await base.announce(changes) }
}

/// A store whose writes tell `changes` which decision facts they changed, after `COMMIT` and before they return;
/// `announce` (PostgreSQL's `NOTIFY`) tells other replicas in the same transaction. Reads pass through.
struct FactRecordingStore: IdentityStore {
    let base: any IdentityStore
    let changes: FactChanges

    func read<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        try await base.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        let changes = self.changes
        return try await base.write { tx in
            let recording = FactRecordingTransaction(base: tx)
            let result = try await body(recording)
            let changed = recording.changed.withLock { $0 }
            if !changed.isEmpty {
                try await tx.announce(changed)
                tx.afterCommit { changes.publish(changed) }
            }
            return result
        }
    }

    func flushErasures() async throws { try await base.flushErasures() }
    func flushErasuresReportingSkipped() async throws -> [String] { try await base.flushErasuresReportingSkipped() }
    func countInWindow(_ scope: String, window: TimeInterval, at t: Date) async throws -> GuessLimitRow {
        try await base.countInWindow(scope, window: window, at: t)
    }
    func decisionRows(accessTokenHash: Data?, resourceId: String?) async throws -> DecisionRows {
        try await base.decisionRows(accessTokenHash: accessTokenHash, resourceId: resourceId)
    }
    func readOne<T: Sendable>(_ body: @escaping @Sendable (any IdentityTransaction) async throws -> T) async throws -> T {
        try await base.readOne(body)
    }
}

/// A store shared with other processes that can relay their writes' fact changes (PostgreSQL's `LISTEN`): the
/// identity service attaches its `FactChanges` when it is made over such a store.
package protocol FactChangeRelay: Sendable {
    /// Starts telling `changes` what other processes change (and whether it can hear them).
    func relay(into changes: FactChanges)
}

extension FactChange {
    /// The wire form of a set of changes, one per line (`u:<id>`, `r:<id>`, `*`): what a `NOTIFY` carries. Past
    /// `limit` bytes it is `*` (everything), so a payload never exceeds PostgreSQL's limit.
    package static func encode(_ changes: Set<FactChange>, limit: Int = 7_000) -> String {
        if changes.contains(.everything) { return "*" }
        let text = changes.map { change -> String in
            switch change {
            case .user(let id): "u:" + id
            case .resource(let id): "r:" + id
            case .everything: "*"
            }
        }.sorted().joined(separator: "\n")
        return text.utf8.count > limit ? "*" : text
    }

    /// The changes a payload names; anything it does not understand is everything.
    package static func decode(_ payload: String) -> Set<FactChange> {
        var changes: Set<FactChange> = []
        for line in payload.split(separator: "\n") {
            if line.hasPrefix("u:") {
                changes.insert(.user(String(line.dropFirst(2))))
            } else if line.hasPrefix("r:") {
                changes.insert(.resource(String(line.dropFirst(2))))
            } else {
                return [.everything]
            }
        }
        return changes.isEmpty ? [.everything] : changes
    }
}
