import Foundation
import PolicyEngine
import PolicyModel

/// One line of a decision-record file (`GET /v1/operator/decisions` as `application/x-ndjson`, `policy log pull`): what
/// was decided, by which policy version, and the request as decided with user ids pseudonymised.
///
/// ```json
/// {"id": 12, "at": "2026-11-22T12:00:00Z", "subject": "u-3f...", "action": "add_source", "resourceType": "project",
///  "effect": "deny", "reason": "limit_exceeded", "policyHash": "9c1e...", "request": {"subject": {...}, ...}}
/// ```
public struct DecisionRecord: Sendable, Hashable {
    /// The record's id in the store, when it has one.
    public var id: Int?
    /// The subject's keyed pseudonym; nil for a signed-out subject.
    public var subject: String?
    /// The recorded effect.
    public var effect: Effect
    /// The recorded reason.
    public var reason: Reason
    /// The content hash of the policy version that decided it.
    public var policyHash: String
    /// The request as decided.
    public var request: Request

    /// A record.
    public init(id: Int?, subject: String?, effect: Effect, reason: Reason, policyHash: String, request: Request) {
        self.id = id
        self.subject = subject
        self.effect = effect
        self.reason = reason
        self.policyHash = policyHash
        self.request = request
    }

    /// The record one line holds; throws naming the field at fault (`RequestReader.readRecord`).
    public init(line: some StringProtocol) throws(RequestError) {
        var text = String(line)
        let result: Result<DecisionRecord, RequestError> = text.withUTF8 { buffer in
            var request = Request(action: "", resource: Resource(type: ""))
            do throws(RequestError) {
                let envelope = try RequestReader().readRecord(UnsafeRawBufferPointer(buffer), into: &request)
                return .success(DecisionRecord(envelope, request: request))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// The record of a read envelope and its request.
    public init(_ envelope: RecordEnvelope, request: Request) {
        self.init(
            id: envelope.id, subject: envelope.subject, effect: envelope.effect, reason: envelope.reason, policyHash: envelope.policyHash,
            request: request)
    }

    /// The record as one JSON line (the form `init(line:)` reads).
    public var json: JSONText {
        var fields: [JSONText.Field] = []
        if let id { fields.append(.init("id", .int(id))) }
        if let subject { fields.append(.init("subject", .string(subject))) }
        fields += [
            .init("action", .string(request.action)), .init("resourceType", .string(request.resource.type)),
            .init("effect", .string(effect.rawValue)), .init("reason", .string(reason.rawValue)), .init("policyHash", .string(policyHash)),
            .init("request", request.json),
        ]
        return .object(fields)
    }
}

/// How a decision changed between the baseline (the base policy, or the recorded outcome) and the candidate.
public enum FlipDirection: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Allowed before, denied now: someone loses something.
    case allowToDeny = "allow-to-deny"
    /// Denied before, allowed now.
    case denyToAllow = "deny-to-allow"
    /// The same effect for another reason (a different message, upgrade tier, or rule).
    case reasonChanged = "reason-changed"

    public static func < (a: FlipDirection, b: FlipDirection) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// The flips of one action, direction, reason pair and subject shape: how many, their share of the records replayed,
/// and up to three examples (pseudonymised subjects, with the record's line).
public struct FlipGroup: Sendable, Hashable {
    public var action: String
    public var direction: FlipDirection
    /// The baseline's reason and the candidate's.
    public var from: Reason
    public var to: Reason
    /// The subject's shape: `tier=pro roles=customer auth=pin`, or `signed-out`.
    public var shape: String
    public var count: Int
    /// Up to three examples: `u-3f2a... (line 17)`.
    public var examples: [String]
}

/// A record that could not be replayed: its line and what is wrong with it.
public struct UnreadableRecord: Sendable, Hashable {
    /// 1-based line number in the file.
    public var line: Int
    /// What is wrong, naming the field (`request.subject.tier: must be a string`).
    public var message: String
}

/// What replaying a file of decision records under a candidate policy found.
public struct ReplayReport: Sendable {
    /// The file the records came from, as the report names it (`decisions.jsonl`, `-` for standard input).
    public var source = "records"
    /// Records read (non-empty lines).
    public var records = 0
    /// Records decided again (the rest are `unreadable`).
    public var replayed = 0
    /// The records that could not be decided again; the first `maxUnreadableKept` are kept.
    public var unreadable: [UnreadableRecord] = []
    /// How many records could not be decided again in all.
    public var unreadableCount = 0
    /// Records per policy version that decided them.
    public var policyVersions: [String: Int] = [:]
    /// The content hash of the baseline (the base policy), nil when the baseline is the recorded outcome.
    public var baseHash: String?
    /// The candidate's content hash.
    public var candidateHash = ""
    /// Records replayed under another version than the baseline's (decided anyway, counted here).
    public var otherVersion = 0
    /// The flips, largest group first.
    public var groups: [FlipGroup] = []

    /// Flips in `direction`, over every group.
    public func flips(_ direction: FlipDirection) -> Int { groups.filter { $0.direction == direction }.reduce(0) { $0 + $1.count } }

    /// Every flip.
    public var totalFlips: Int { groups.reduce(0) { $0 + $1.count } }

    /// The first unreadable records kept for the report.
    public static let maxUnreadableKept = 20
}

/// Re-decides recorded traffic under a candidate policy set and reports whom the change hits.
public enum DecisionReplay {
    /// Replays `lines` (each a record, numbered from 1; blank lines skipped) under `candidate`, against `base` when
    /// given, else against each record's recorded outcome.
    public static func replay(lines: some Sequence<Substring>, source: String = "records", candidate: CompiledPolicy, base: CompiledPolicy?) -> ReplayReport {
        var replayer = Replayer(source: source, candidate: candidate, base: base)
        for line in lines {
            var line = line
            line.withUTF8 { replayer.add(UnsafeRawBufferPointer($0)) }
        }
        return replayer.finish()
    }

    /// Replays the records of `bytes` (a whole file: records separated by newlines, numbered from 1, blank lines
    /// skipped), as `replay(lines:)` does, without making a string of each line: the form `policy replay` reads.
    public static func replay(bytes: UnsafeRawBufferPointer, source: String = "records", candidate: CompiledPolicy, base: CompiledPolicy?) -> ReplayReport {
        var replayer = Replayer(source: source, candidate: candidate, base: base)
        _ = replayer.add(block: bytes, final: true)
        return replayer.finish()
    }

    /// A replay fed a file's bytes a block at a time (`policy replay` reads a million records without holding them):
    /// one request value reused for every record, the flips grouped as they come.
    public struct Replayer {
        let candidate: CompiledPolicy
        let base: CompiledPolicy?
        var report = ReplayReport()
        var groups: [FlipKey: (count: Int, examples: [String])] = [:]
        var number = 0
        var request = Request(action: "", resource: Resource(type: ""))
        let reader = RequestReader()
        /// The policy hash of the records just read and how many of them are not yet in `report.policyVersions`.
        var runHash = ""
        var runCount = 0

        /// A replay under `candidate`, against `base` when given, else against each record's recorded outcome.
        public init(source: String = "records", candidate: CompiledPolicy, base: CompiledPolicy?) {
            self.candidate = candidate
            self.base = base
            report.source = source
            report.candidateHash = candidate.contentHash
            report.baseHash = base?.contentHash
        }

        /// Replays every complete line of `block` and returns how many bytes it consumed (up to and including the last
        /// newline); the caller keeps the rest and passes it again before the next block. With `final`, the block is
        /// all there is and a last line without a newline is replayed too.
        public mutating func add(block: UnsafeRawBufferPointer, final: Bool) -> Int {
            guard let start = block.baseAddress else { return 0 }
            var offset = 0
            while offset < block.count {
                guard let newline = memchr(start + offset, Int32(UInt8(ascii: "\n")), block.count - offset) else { break }
                let end = UnsafeRawPointer(newline) - start
                add(UnsafeRawBufferPointer(start: start + offset, count: end - offset))
                offset = end + 1
            }
            if final, offset < block.count {
                add(UnsafeRawBufferPointer(start: start + offset, count: block.count - offset))
                return block.count
            }
            return offset
        }

        /// Replays one record line (without its newline).
        mutating func add(_ line: UnsafeRawBufferPointer) {
            number += 1
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return }
            report.records += 1
            let record: RecordEnvelope
            do {
                record = try reader.readRecord(line, into: &request)
            } catch {
                report.unreadableCount += 1
                if report.unreadable.count < ReplayReport.maxUnreadableKept {
                    report.unreadable.append(UnreadableRecord(line: number, message: error.field.isEmpty ? error.message : "\(error.field): \(error.message)"))
                }
                return
            }
            report.replayed += 1
            if record.policyHash != runHash {
                if runCount > 0 { report.policyVersions[runHash, default: 0] += runCount }
                runHash = record.policyHash
                runCount = 0
            }
            runCount += 1
            if let baseHash = report.baseHash, record.policyHash != baseHash { report.otherVersion += 1 }
            let before: (effect: Effect, reason: Reason)
            if let base {
                let d = base.decide(request)
                before = (d.effect, d.reason)
            } else {
                before = (record.effect, record.reason)
            }
            let after = candidate.decide(request)
            let direction: FlipDirection
            if before.effect == .allow, after.effect == .deny {
                direction = .allowToDeny
            } else if before.effect == .deny, after.effect == .allow {
                direction = .denyToAllow
            } else if before.reason != after.reason {
                direction = .reasonChanged
            } else {
                return
            }
            let key = FlipKey(action: request.action, direction: direction, from: before.reason, to: after.reason, shape: DecisionReplay.shape(of: request.subject))
            var group = groups[key] ?? (0, [])
            group.count += 1
            if group.examples.count < 3 { group.examples.append("\(record.subject ?? request.subject.id ?? "signed-out") (line \(number))") }
            groups[key] = group
        }

        /// The report of everything replayed.
        public mutating func finish() -> ReplayReport {
            if runCount > 0 { report.policyVersions[runHash, default: 0] += runCount }
            runCount = 0
            report.groups = groups.map { key, value in
                FlipGroup(action: key.action, direction: key.direction, from: key.from, to: key.to, shape: key.shape, count: value.count, examples: value.examples)
            }.sorted { a, b in
                a.count != b.count ? a.count > b.count : (a.direction, a.action, a.shape, a.from.rawValue, a.to.rawValue) < (b.direction, b.action, b.shape, b.from.rawValue, b.to.rawValue)
            }
            return report
        }
    }

    /// What groups a flip.
    struct FlipKey: Hashable {
        var action: String, direction: FlipDirection, from: Reason, to: Reason, shape: String
    }

    /// A subject's shape for grouping: tier, app roles and auth method; `signed-out` without an id.
    static func shape(of subject: Subject) -> String {
        guard subject.isSignedIn || subject.id.map({ !$0.isEmpty }) == true else { return "signed-out" }
        let roles = subject.roles.isEmpty ? "-" : subject.roles.sorted().joined(separator: "+")
        return "tier=\(subject.tier ?? "-") roles=\(roles) auth=\(subject.auth?.method ?? "-")"
    }
}
