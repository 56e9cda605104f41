import Foundation
import PolicyModel
import Synchronization

/// Who is asking, for the limits kept per client: the server passes the client's address (or another
/// stable per-client key); in-process callers pass `.inProcess`. Only a digest is ever stored.
public struct ClientSource: Sendable, Hashable, CustomStringConvertible {
    /// Hex of the first 16 bytes of SHA-256 of the key: an address is personal data, so it is not kept.
    let digest: String

    /// The source named by `key` (the client address, or another stable per-client key); only a
    /// digest prefix of it is kept.
    public init(_ key: String) {
        digest = SecretCoding.hex(SecretCoding.sha256(key).prefix(16))
    }

    /// The one source of in-process calls (tests, tools, a single-user app): they share its limits.
    public static let inProcess = ClientSource("in-process")

    public var description: String { "ClientSource(\(digest.prefix(8)))" }
}

/// Limits on guesses and probes that are not tied to one account, and the failure-rate alarm.
public struct AbuseLimits: Sendable {
    /// Accounts one source may create per window (anonymous or username + PIN): each is rows and a
    /// KDF run nobody authenticated. Generous, since carrier NAT puts many users behind one address.
    public var signUps = 100
    /// The window `signUps` counts over, in seconds.
    public var signUpWindow: TimeInterval = 3600
    /// Failed PIN sign-ins one source may make per window (password spraying across accounts).
    public var sourcePINFailures = 30
    /// The window `sourcePINFailures` counts over, in seconds.
    public var sourcePINWindow: TimeInterval = 15 * 60
    /// "Username is taken" answers one source (register) or one user (setUsername) may get per window.
    public var usernameProbes = 10
    /// The window `usernameProbes` counts over, in seconds.
    public var usernameProbeWindow: TimeInterval = 3600
    /// Wrong share codes one source may enter per window (besides the per-user limit).
    public var sourceShareCodeGuesses = 20
    /// The window `sourceShareCodeGuesses` counts over, in seconds.
    public var sourceShareCodeWindow: TimeInterval = 15 * 60
    /// Failed PIN checks across all accounts per window that raise the `failure_rate_alarm` audit event.
    public var alarmFailures = 100
    /// The window `alarmFailures` counts over, in seconds.
    public var alarmWindow: TimeInterval = 60
    /// Repeated refusals (throttled, locked, rejected Apple tokens) of one kind for one actor write
    /// at most one audit row per interval; the others only count in `SecurityCounters`.
    public var refusalAuditInterval: TimeInterval = 60

    /// The documented defaults.
    public init() {}
}

/// Counters of security events since start, for the server to export as metrics.
public final class SecurityCounters: Sendable {
    /// A counter; the raw value, its case name in snake case (`pin_failures`), is its metric name.
    public enum Name: CaseIterable, SpelledCases, Sendable {
        package static let spelling = CaseSpelling.snake

        /// PIN checks that failed (wrong PIN or unknown user).
        case pinFailures
        /// Attempts refused without a check: throttled, locked, source-limited.
        case refusals
        /// Times the global failure rate crossed `AbuseLimits.alarmFailures`.
        case failureRateAlarms
        /// Refusals not written to the audit log because one like it was written within the interval.
        case coalescedAuditRows
        /// Sign in with Apple tokens and notifications that failed verification.
        case appleTokenRejections
        /// Erasures whose cleanup of old row versions (PostgreSQL's `VACUUM`) was skipped, for want of the
        /// tables' ownership: the deleted values stay in the tables' pages until the owner's next VACUUM.
        case erasureCleanupsSkipped
    }

    private let values = Mutex<[Name: Int]>([:])

    init() {}

    func add(_ name: Name, _ n: Int = 1) { values.withLock { $0[name, default: 0] += n } }

    /// Every counter by its name.
    public var snapshot: [String: Int] {
        values.withLock { v in Dictionary(uniqueKeysWithValues: Name.allCases.map { ($0.rawValue, v[$0] ?? 0) }) }
    }

    /// The count of `name` since the service started.
    public func value(_ name: Name) -> Int { values.withLock { $0[name] ?? 0 } }
}

/// A fixed-window failure count under one scope.
struct GuessWindow {
    let scope: String
    let limit: Int
    let window: TimeInterval
}

extension IdentityService {
    /// Seconds until the window of `w` ends when its limit is reached, else nil.
    func retryAfter(_ tx: any IdentityTransaction, _ w: GuessWindow, at t: Date) async throws -> TimeInterval? {
        guard let row = try await tx.fetchOne(GuessLimitRow.self, "scope", .text(w.scope)), t.timeIntervalSince(row.windowStart) < w.window,
            row.failures >= w.limit
        else { return nil }
        return row.windowStart.addingTimeInterval(w.window).timeIntervalSince(t)
    }

    /// Counts one failure under `w`; returns the count in the current window.
    @discardableResult
    func countGuess(_ tx: any IdentityTransaction, _ w: GuessWindow, at t: Date) async throws -> Int {
        let row = GuessLimitRow.counting(try await tx.fetchOne(GuessLimitRow.self, "scope", .text(w.scope)), scope: w.scope, window: w.window, at: t)
        try await tx.upsert(row)
        return row.failures
    }

    /// Appends a refusal to the audit log unless one like it was written within `refusalAuditInterval`, by
    /// this replica or any other: the mark is a row of the store (`guessLimit`, under a digest of the kind,
    /// reason and actor), read and written in the refusal's own transaction, so concurrent refusals on any
    /// number of replicas write one row per interval (a serializable store makes the second one see the
    /// first). A mark never moves back: a refusal dated before it (a replica whose clock is behind) is coalesced.
    func auditRefusal(_ tx: any IdentityTransaction, _ kind: AuditKind, method: String?, reason: String, user: UserRow?, scope: String, at t: Date) async throws {
        let counters = self.counters
        let key = "refusal-audit:" + SecretCoding.hex(SecretCoding.sha256("\(kind.rawValue)|\(reason)|\(user?.pseudonym ?? scope)").prefix(16))
        let interval = configuration.abuse.refusalAuditInterval
        if let mark = try await tx.fetchOne(GuessLimitRow.self, "scope", .text(key)), t < mark.windowStart.addingTimeInterval(interval) {
            tx.afterCommit {
                counters.add(.refusals)
                counters.add(.coalescedAuditRows)
            }
            return
        }
        try await tx.upsert(GuessLimitRow(scope: key, windowStart: t, failures: 1))
        try await audit(tx, kind, method: method, outcome: .failure, reason: reason, user: user, at: t)
        tx.afterCommit { counters.add(.refusals) }
    }

    /// The per-source PIN failure window of `source`.
    func sourcePINWindow(_ source: ClientSource) -> GuessWindow {
        GuessWindow(scope: "pin-source:" + source.digest, limit: configuration.abuse.sourcePINFailures, window: configuration.abuse.sourcePINWindow)
    }

    /// Counts a checked wrong PIN in the global failure rate, in a short transaction of its own (never a
    /// flow's, so a burst does not abort the flows' serializable transactions on one row), and raises the
    /// alarm when the count reaches `AbuseLimits.alarmFailures`. Called once the PIN was checked, whether
    /// or not the flow's own settling write then succeeded.
    func countGlobalPINFailure(at t: Date) async throws {
        let limits = configuration.abuse
        let global = try await store.countInWindow("global:pin-failures", window: limits.alarmWindow, at: t).failures
        guard global == limits.alarmFailures else { return }
        let counters = self.counters
        try await store.write { tx in
            tx.afterCommit { counters.add(.failureRateAlarms) }
            try await self.audit(tx, .failureRateAlarm, method: AuthMethod.pin, outcome: .failure, reason: "failures:\(global)/\(Int(limits.alarmWindow))s", at: t)
        }
    }

    /// Admits one sign-in request of `source` under a limit every replica shares (a window in the store):
    /// nil when admitted, else the seconds until the window ends.
    public func admitSignIn(source: ClientSource, limit: Int, window: TimeInterval) async throws -> TimeInterval? {
        let t = now()
        let row = try await store.countInWindow("signin-source:" + source.digest, window: window, at: t)
        guard row.failures > limit else { return nil }
        return max(1, row.windowStart.addingTimeInterval(window).timeIntervalSince(t))
    }

    /// The sign-up window of a source.
    func signUpWindow(_ source: ClientSource) -> GuessWindow {
        GuessWindow(scope: "signup-source:" + source.digest, limit: configuration.abuse.signUps, window: configuration.abuse.signUpWindow)
    }

    /// Throws `throttled` when `source` has created its share of accounts this window.
    func checkSignUps(_ tx: any IdentityTransaction, _ source: ClientSource, at t: Date) async throws {
        if let wait = try await retryAfter(tx, signUpWindow(source), at: t) {
            throw IdentityError(.throttled, field: "source", "too many new accounts from this client", retryAfter: wait)
        }
    }

    /// Refuses a `taken` answer once the probe limit of this scope is spent, else counts it.
    func takenAnswer(_ tx: any IdentityTransaction, scope: String, at t: Date) async throws -> IdentityError {
        try await takenAnswer(tx, scopes: [scope], at: t)
    }

    /// Refuses a `taken` answer once the probe limit of any of `scopes` is spent, else counts it under each.
    func takenAnswer(_ tx: any IdentityTransaction, scopes: [String], at t: Date) async throws -> IdentityError {
        let limits = configuration.abuse
        let windows = scopes.map { GuessWindow(scope: $0, limit: limits.usernameProbes, window: limits.usernameProbeWindow) }
        for w in windows {
            if let wait = try await retryAfter(tx, w, at: t) {
                return IdentityError(.throttled, field: "username", "too many usernames tried", retryAfter: wait)
            }
        }
        for w in windows { try await countGuess(tx, w, at: t) }
        return IdentityError(.conflict, field: "username", "is taken")
    }
}
