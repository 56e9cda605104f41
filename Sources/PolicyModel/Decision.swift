import Foundation
import Synchronization

/// The answer to a `Request`: allow or deny, why, and what the user can do about it.
///
/// Cheap to copy: the effect, the reason and the limit figures are held inline, and the message, the tier to
/// upgrade to and the location in one shared immutable object, which a compiled policy builds once per decision it
/// can give, in storage that lives as long as the process (`DecisionText.intern`). Copying a decision out of the
/// policy is a small copy: no retain, no allocation.
public struct Decision: Sendable, Hashable {
    /// Allow or deny.
    public var effect: Effect
    /// Why: the contract's reason code.
    public var reason: Reason
    /// Which of `limit`, `used`, `remaining` are present: bits 0, 1, 2.
    @usableFromInline var figures: UInt8
    @usableFromInline var limitValue: Int
    @usableFromInline var usedValue: Int
    @usableFromInline var remainingValue: Int
    /// `message`, `upgradeTo` and `policy`; nil when all three are absent.
    @inlinable
    package var text: DecisionText? {
        get { storage.text }
        set { storage = newValue.map { .shared($0) } ?? .none }
    }
    @usableFromInline var storage: DecisionTextStorage

    /// A decision with the fields that apply; the others stay absent.
    @inlinable
    public init(
        effect: Effect, reason: Reason, message: String? = nil, limit: Int? = nil, used: Int? = nil,
        remaining: Int? = nil, upgradeTo: String? = nil, policy: SourceLocation? = nil
    ) {
        self.init(effect: effect, reason: reason, text: DecisionText.make(message: message, upgradeTo: upgradeTo, policy: policy))
        self.limit = limit
        self.used = used
        self.remaining = remaining
    }

    /// A decision sharing `text` (built ahead, so making it allocates nothing), with no limit figures.
    @inlinable
    package init(effect: Effect, reason: Reason, text: DecisionText?) {
        self.effect = effect
        self.reason = reason
        self.figures = 0
        self.limitValue = 0
        self.usedValue = 0
        self.remainingValue = 0
        self.storage = text.map { .shared($0) } ?? .none
    }

    /// A copy of this decision; when its text is interned, the copy is built from its fields with the text's reference
    /// unretained, inline, where copying the value calls the storage's outlined copy (which tests for a reference to
    /// retain: ~8 instructions a decision for `decide`, issue 41, round six).
    @inlinable @inline(__always)
    package var copied: Decision {
        guard case .immortal(let text) = storage else { return self }
        return Decision(
            effect: effect, reason: reason, figures: figures, limitValue: limitValue, usedValue: usedValue, remainingValue: remainingValue,
            storage: .immortal(text))
    }

    @inlinable @inline(__always)
    init(effect: Effect, reason: Reason, figures: UInt8, limitValue: Int, usedValue: Int, remainingValue: Int, storage: DecisionTextStorage) {
        self.effect = effect
        self.reason = reason
        self.figures = figures
        self.limitValue = limitValue
        self.usedValue = usedValue
        self.remainingValue = remainingValue
        self.storage = storage
    }

    /// The same decision, its text moved to storage that lives as long as the process (`DecisionText.intern`), so that
    /// copying it retains nothing: for the decisions a compiled policy builds once and returns many times (the retain
    /// cost ~22 instructions a decision, issue 41). Unchanged when the process has interned its budget of texts.
    package var interned: Decision {
        guard case .shared(let text) = storage, let immortal = DecisionText.intern(text) else { return self }
        var decision = self
        decision.storage = .immortal(immortal)
        return decision
    }

    /// User-facing text; present on every deny.
    @inlinable
    public var message: String? {
        get { storage.read { $0.message } }
        set { text = DecisionText.make(message: newValue, upgradeTo: upgradeTo, policy: policy) }
    }

    /// For `limit_exceeded` and an allowed limited action: the cap of the subject's tier.
    @inlinable
    public var limit: Int? {
        get { figures & 1 != 0 ? limitValue : nil }
        set { set(newValue, bit: 1, \.limitValue) }
    }

    /// How much of the limit the request says is used.
    @inlinable
    public var used: Int? {
        get { figures & 2 != 0 ? usedValue : nil }
        set { set(newValue, bit: 2, \.usedValue) }
    }

    /// How much of the limit is left (0 when exceeded).
    @inlinable
    public var remaining: Int? {
        get { figures & 4 != 0 ? remainingValue : nil }
        set { set(newValue, bit: 4, \.remainingValue) }
    }

    /// The tier id that would lift the denial.
    @inlinable
    public var upgradeTo: String? {
        get { storage.read { $0.upgradeTo } }
        set { text = DecisionText.make(message: message, upgradeTo: newValue, policy: policy) }
    }

    /// Where the rule that decided is written.
    @inlinable
    public var policy: SourceLocation? {
        get { storage.read { $0.policy } }
        set { text = DecisionText.make(message: message, upgradeTo: upgradeTo, policy: newValue) }
    }

    /// Sets all three limit figures at once.
    @inlinable
    package mutating func setFigures(limit: Int, used: Int, remaining: Int) {
        figures = 7
        limitValue = limit
        usedValue = used
        remainingValue = remaining
    }

    @inlinable
    mutating func set(_ value: Int?, bit: UInt8, _ field: WritableKeyPath<Decision, Int>) {
        if let value {
            figures |= bit
            self[keyPath: field] = value
        } else {
            figures &= ~bit
            self[keyPath: field] = 0
        }
    }

    /// Whether the effect is allow.
    @inlinable
    public var isAllowed: Bool { effect == .allow }

    public static func == (a: Decision, b: Decision) -> Bool {
        a.effect == b.effect && a.reason == b.reason && a.limit == b.limit && a.used == b.used && a.remaining == b.remaining
            && (a.text === b.text || (a.message == b.message && a.upgradeTo == b.upgradeTo && a.policy == b.policy))
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(effect)
        hasher.combine(reason)
        hasher.combine(message)
        hasher.combine(limit)
        hasher.combine(used)
        hasher.combine(remaining)
        hasher.combine(upgradeTo)
        hasher.combine(policy)
    }
}

/// Where a decision's text is held: nowhere, shared by reference, or in storage that lives as long as the process
/// (`DecisionText.intern`), which a copy does not retain.
@usableFromInline
package enum DecisionTextStorage: Sendable {
    case none
    case shared(DecisionText)
    case immortal(Unmanaged<DecisionText>)

    @inlinable
    var text: DecisionText? {
        switch self {
        case .none: nil
        case .shared(let text): text
        case .immortal(let text): text.takeUnretainedValue()
        }
    }

    /// `body` of the text, lent, nil when there is none: reading a field through `text` retained and released an
    /// interned text (`plan`, which reads a deny's message, ~5 instructions a call).
    @inlinable
    func read<Field>(_ body: (DecisionText) -> Field?) -> Field? {
        switch self {
        case .none: nil
        case .shared(let text): body(text)
        case .immortal(let text): text._withUnsafeGuaranteedRef(body)
        }
    }
}

/// A decision's message, upgrade tier and location, shared between copies: immutable, so a compiled policy
/// builds each once.
@usableFromInline
package final class DecisionText: Sendable {
    @usableFromInline let message: String?
    @usableFromInline let upgradeTo: String?
    @usableFromInline let policy: SourceLocation?
    /// The three as `DecisionWriter` writes them, rendered once (`DecisionWriter.appendText`): the message's part
    /// up to `jsonSplit`, then the tier to upgrade to and the location; the limit figures go between the two.
    @usableFromInline let json: [UInt8]
    @usableFromInline let jsonSplit: Int

    @usableFromInline
    package init(message: String?, upgradeTo: String?, policy: SourceLocation?) {
        self.message = message
        self.upgradeTo = upgradeTo
        self.policy = policy
        var json: [UInt8] = []
        self.jsonSplit = DecisionWriter.appendText(message: message, upgradeTo: upgradeTo, policy: policy, to: &json)
        self.json = json
    }

    /// The text of those three fields, nil when all are absent.
    @inlinable
    package static func make(message: String?, upgradeTo: String?, policy: SourceLocation?) -> DecisionText? {
        message == nil && upgradeTo == nil && policy == nil ? nil : DecisionText(message: message, upgradeTo: upgradeTo, policy: policy)
    }

    /// A text with `text`'s content that lives as long as the process, kept by content (recompiling a policy reuses
    /// its texts); nil once the texts kept hold `internBudget` bytes, so that a process compiling ever new policies
    /// (a fuzzer, a server reloading edited sets for months) keeps a bounded amount and shares the rest by reference.
    package static func intern(_ text: DecisionText) -> Unmanaged<DecisionText>? {
        interned.withLock { kept in
            let key = InternKey(message: text.message, upgradeTo: text.upgradeTo, policy: text.policy)
            if let existing = kept.texts[key] { return .passUnretained(existing) }
            let size = 2 * text.json.count + 128
            guard kept.bytes + size <= internBudget else { return nil }
            kept.bytes += size
            kept.texts[key] = text
            return .passUnretained(text)
        }
    }

    /// The bytes (roughly: the text twice and an entry's overhead) the interned texts may hold: 8 MiB.
    package static let internBudget = 8 << 20

    private struct InternKey: Hashable {
        let message: String?
        let upgradeTo: String?
        let policy: SourceLocation?
    }

    private struct Interned {
        var texts: [InternKey: DecisionText] = [:]
        var bytes = 0
    }

    private static let interned = Mutex(Interned())
}

/// The two outcomes of a decision.
public enum Effect: String, Sendable, Hashable, CaseIterable, Codable {
    /// The subject may take the action.
    case allow
    /// The subject may not take the action; `reason` says why.
    case deny
}

/// Why a decision came out as it did. The raw values are the contract's reason codes.
public enum Reason: String, Sendable, Hashable, CaseIterable, Codable {
    /// Every requirement passed, or an allow rule granted the action.
    case allowed
    /// The policy does not know the resource type or the action.
    case defaultDeny = "default_deny"
    /// An explicit deny rule matched.
    case deniedByRule = "denied_by_rule"
    /// The action needs a signed-in subject.
    case unauthenticated
    /// The subject must verify again: another method, or more recently.
    case stepUpRequired = "step_up_required"
    /// The action needs an app role the subject lacks.
    case roleRequired = "role_required"
    /// The subject is not a member of the resource.
    case notMember = "not_member"
    /// A member whose role does not grant the action.
    case accessDenied = "access_denied"
    /// Only the owner may take the action.
    case ownerOnly = "owner_only"
    /// The subject's tier lacks the feature; `upgradeTo` names the tier that has it.
    case requiresUpgrade = "requires_upgrade"
    /// The tier's limit is used up; `limit`, `used` and `remaining` say how far.
    case limitExceeded = "limit_exceeded"
    /// The subject's privacy settings do not consent to the action.
    case consentRequired = "consent_required"

    /// The case's position in declaration order (its index in `allCases`): an array index with no search, for tables
    /// by reason (`decide`'s prebuilt denies, the server's counters). A new reason fails to compile here until it has one.
    @inlinable
    package var ordinal: Int {
        switch self {
        case .allowed: 0
        case .defaultDeny: 1
        case .deniedByRule: 2
        case .unauthenticated: 3
        case .stepUpRequired: 4
        case .roleRequired: 5
        case .notMember: 6
        case .accessDenied: 7
        case .ownerOnly: 8
        case .requiresUpgrade: 9
        case .limitExceeded: 10
        case .consentRequired: 11
        }
    }
}

/// A place in a policy file: `path:line:column`, both counted from 1.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The file's path as the policy set was loaded.
    public var file: String
    /// The line, from 1.
    public var line: Int
    /// The column, from 1.
    public var column: Int

    /// A location from its parts.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`.
    public var description: String { "\(file):\(line):\(column)" }

    /// Orders by file, then line, then column.
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}
