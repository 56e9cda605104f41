import Foundation
import PolicyModel

/// What `decide` reads of a request, whichever form it comes in: the String-keyed `Request` or an
/// `InternedRequest`. One generic decide serves both, so they cannot drift apart; each form is specialised.
protocol DecideInput {
    /// How the subject's role on the resource is held: its name, or the policy's id for it.
    associatedtype Role

    var signedIn: Bool { get }
    /// `context.now`, or the clock's now.
    var decisionTime: Date { get }
    func effectiveTier(_ table: DecisionTable, signedIn: Bool, now: Date) -> Int
    /// Whether the subject owns the resource, and its role on it (the owner role for the owner).
    func resourceStanding(_ table: DecisionTable, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: Role?)
    func grants(_ entry: ActionEntry, _ role: Role) -> Bool
    /// The role's name, for traces.
    func name(of role: Role, entry: ActionEntry, _ table: DecisionTable) -> String
    func authMethodSatisfies(_ entry: ActionEntry) -> Bool
    /// The auth method's name, for traces.
    var authMethodName: String? { get }
    var verifiedAt: Date? { get }
    func holdsAppRole(_ entry: ActionEntry) -> Bool
    /// The count the action's limit reads.
    func usedCount(_ entry: ActionEntry) -> Int
    /// Whether `decide` reads a consent compiled to a `ConsentTest` with `consentHolds` instead of building the
    /// conditions' input, and builds that input out of line: the String-keyed request. The interned path keeps both as
    /// they were (either made every interned decision ~10 instructions dearer: more registers spilled in its frame).
    static var decidesConsentByTest: Bool { get }
    /// Whether the consent's condition, compiled to `test`, is true for this request.
    func consentHolds(_ test: ConsentTest) -> Bool
    /// Calls `body` with what the action's conditions see.
    func withConditionInput<Result>(
        _ table: DecisionTable, entry: ActionEntry, now: Date, tier: Int, signedIn: Bool, role: Role?, _ body: (EvaluationInput) -> Result
    ) -> Result
}

extension Request: DecideInput {
    /// The role held without owning its `String`: releasing the role, even an absent one, cost ~15 instructions a
    /// decision (issue 41). Its name, when a caller needs it, is read again (`roleName`).
    typealias Role = RequestRole

    /// `subject.isSignedIn`, with an auth method that is a small name compared with `anonymous` as two words
    /// instead of a String compare (~25 instructions a decision).
    @inline(__always) var signedIn: Bool { subject.signedIn }
    @inline(__always) var decisionTime: Date { context.now ?? Date() }

    @inline(__always)
    func effectiveTier(_ table: DecisionTable, signedIn: Bool, now: Date) -> Int {
        table.effectiveTier(of: subject, signedIn: signedIn, now: now)
    }

    @inline(__always)
    func resourceStanding(_ table: DecisionTable, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: RequestRole?) {
        table.standingRole(self, signedIn: signedIn, entry: entry)
    }

    @inline(__always)
    func grants(_ entry: ActionEntry, _ role: RequestRole) -> Bool {
        // A small ASCII role compares as two words, as `ActionEntry.grants` would after reading it again.
        if entry.grantingASCII, let small = role.small {
            for granting in entry.grantingSmall where granting == small { return true }
            return false
        }
        return entry.grants(roleName(role, entry: entry))
    }

    func name(of role: RequestRole, entry: ActionEntry, _ table: DecisionTable) -> String { roleName(role, entry: entry) }

    /// The name of a role `DecisionTable.standingRole` gave for this request and `entry`.
    func roleName(_ role: RequestRole, entry: ActionEntry) -> String {
        if role.ofOwner { return entry.ownerRole ?? "owner" }
        guard let id = subject.id, let name = resource.members.value(forSmall: id) else {
            preconditionFailure("a member's role is read from the request it came from")
        }
        return name
    }

    @inline(__always) func authMethodSatisfies(_ entry: ActionEntry) -> Bool { subject.authMethodSatisfies(entry) }

    var authMethodName: String? { subject.auth?.method }
    @inline(__always) var verifiedAt: Date? { subject.auth?.verifiedAt }

    @inline(__always) func holdsAppRole(_ entry: ActionEntry) -> Bool { subject.holdsAppRole(entry) }

    @inline(__always) func usedCount(_ entry: ActionEntry) -> Int { resource.usage.value(forSmall: entry.limitCounter) ?? 0 }

    static var decidesConsentByTest: Bool { true }
    @inline(__always) func consentHolds(_ test: ConsentTest) -> Bool { test.holds(self) }

    @inline(__always)
    func withConditionInput<Result>(
        _ table: DecisionTable, entry: ActionEntry, now: Date, tier: Int, signedIn: Bool, role: RequestRole?, _ body: (EvaluationInput) -> Result
    ) -> Result {
        withConditionInput(table, now: now, tier: tier, signedIn: signedIn, roleName: role.map { roleName($0, entry: entry) }, body)
    }

    @inline(__always)
    func withConditionInput<Result>(
        _ table: DecisionTable, now: Date, tier: Int, signedIn: Bool, roleName: String?, _ body: (EvaluationInput) -> Result
    ) -> Result {
        withUnsafePointer(to: self) { pointer in
            body(EvaluationInput(borrowing: pointer, now: now, effectiveTier: table.tiers[tier].id, signedIn: signedIn, resourceRole: roleName))
        }
    }
}

/// A `Request`'s role on its resource as `decide` holds it: trivial, no `String` owned. The owner's role
/// (`entry.ownerRole ?? "owner"`) or the member's, read from the request; `small` is its words when it is a small
/// ASCII string (`SmallName`), nil when it is not (the name is then read again to compare it).
struct RequestRole {
    let ofOwner: Bool
    let small: SmallName?
}

extension Subject {
    /// `isSignedIn`, with an auth method that is a small name compared with `anonymous` as two words instead of a
    /// String compare (~25 instructions a decision).
    @inline(__always) var signedIn: Bool {
        if let method = auth?.method, let small = SmallName(method) {
            guard let id, !id.isEmpty else { return false }
            return small != .anonymous
        }
        return isSignedIn
    }

    @inline(__always)
    func authMethodSatisfies(_ entry: ActionEntry) -> Bool {
        guard let method = auth?.method else { return false }
        if entry.authMethodsASCII, let small = SmallName(method) { return entry.authMethodSmall.contains(small) }
        return entry.authMethods.contains(method)
    }

    @inline(__always)
    func holdsAppRole(_ entry: ActionEntry) -> Bool {
        guard let needed = entry.appRoles else { return true }
        guard entry.appRolesASCII else { return roles.contains(where: needed.contains) }
        for role in roles {
            if let small = SmallName(role) {
                if entry.appRoleSmall.contains(small) { return true }
            } else if needed.contains(role) {
                return true
            }
        }
        return false
    }
}

/// What `plan` reads of its caller's subject and context: the request `decide` would see for a resource that holds
/// nothing but its type (no owner, members, usage or attributes), read in place. No `Request` is built (copying the
/// subject in and destroying it cost ~650 instructions a plan) until a condition needs one (`withConditionInput`).
struct PlanProbe: DecideInput {
    let subject: UnsafePointer<Subject>
    let context: UnsafePointer<Context>
    let action: String
    let resourceType: String

    @inline(__always) var signedIn: Bool { subject.pointee.signedIn }
    @inline(__always) var decisionTime: Date { context.pointee.now ?? Date() }

    @inline(__always)
    func effectiveTier(_ table: DecisionTable, signedIn: Bool, now: Date) -> Int {
        table.effectiveTier(of: subject.pointee, signedIn: signedIn, now: now)
    }

    /// The resource has no owner and no members.
    func resourceStanding(_ table: DecisionTable, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: String?) { (false, nil) }
    func grants(_ entry: ActionEntry, _ role: String) -> Bool { entry.grants(role) }
    func name(of role: String, entry: ActionEntry, _ table: DecisionTable) -> String { role }
    @inline(__always) func authMethodSatisfies(_ entry: ActionEntry) -> Bool { subject.pointee.authMethodSatisfies(entry) }
    var authMethodName: String? { subject.pointee.auth?.method }
    @inline(__always) var verifiedAt: Date? { subject.pointee.auth?.verifiedAt }
    @inline(__always) func holdsAppRole(_ entry: ActionEntry) -> Bool { subject.pointee.holdsAppRole(entry) }
    /// The resource has no usage: every counter is 0.
    @inline(__always) func usedCount(_ entry: ActionEntry) -> Int { 0 }

    static var decidesConsentByTest: Bool { false }
    func consentHolds(_ test: ConsentTest) -> Bool { test.holds(request) }

    /// The request itself, built now.
    var request: Request {
        Request(subject: subject.pointee, action: action, resource: Resource(type: resourceType), context: context.pointee)
    }

    func withConditionInput<Result>(
        _ table: DecisionTable, entry: ActionEntry, now: Date, tier: Int, signedIn: Bool, role: String?, _ body: (EvaluationInput) -> Result
    ) -> Result {
        request.withConditionInput(table, now: now, tier: tier, signedIn: signedIn, roleName: role, body)
    }
}

extension InternedRequest: DecideInput {
    /// A member role id, -1 for a role the policy does not know.
    typealias Role = Int32

    @inline(__always) var decisionTime: Date { now ?? Date() }

    @inline(__always)
    func effectiveTier(_ table: DecisionTable, signedIn: Bool, now: Date) -> Int {
        guard signedIn, let tier, tier.index >= 0, Int(tier.index) < table.tiers.count else { return table.defaultTier }
        return Subject.subscriptionHasLapsed(expiry: subscriptionExpiry, at: now) ? table.defaultTier : Int(tier.index)
    }

    @inline(__always)
    func resourceStanding(_ table: DecisionTable, signedIn: Bool, entry: ActionEntry) -> (isOwner: Bool, role: Int32?) {
        guard signedIn else { return (false, nil) }
        switch self.standing {
        case .none: return (false, nil)
        case .owner: return entry.owner == nil ? (false, nil) : (true, entry.ownerRoleID)
        case .member(let id):
            let role = id?.index ?? -1
            return (role >= 0 && role == entry.ownerRoleID, role)
        }
    }

    @inline(__always) func grants(_ entry: ActionEntry, _ role: Int32) -> Bool { entry.grants(roleID: role) }

    func name(of role: Int32, entry: ActionEntry, _ table: DecisionTable) -> String {
        role >= 0 && Int(role) < table.memberRoleNames.names.count ? table.memberRoleNames.names[Int(role)] : "?"
    }

    @inline(__always)
    func authMethodSatisfies(_ entry: ActionEntry) -> Bool {
        guard let authMethod else { return false }
        return authMethod.index < 8 && entry.authMethodBits & (1 << authMethod.index) != 0
    }

    var authMethodName: String? { authMethod.map { Int($0.index) < AuthMethod.all.count ? AuthMethod.all[Int($0.index)] : "?" } }

    @inline(__always)
    func holdsAppRole(_ entry: ActionEntry) -> Bool {
        guard let needed = entry.appRoleIDs else { return true }
        return appRoles.intersects(needed)
    }

    @inline(__always) func usedCount(_ entry: ActionEntry) -> Int { used }

    static var decidesConsentByTest: Bool { false }
    func consentHolds(_ test: ConsentTest) -> Bool {
        withRequest(reading: "the action's consent") { test.holds($0.pointee) }
    }

    /// Calls `body` with the stored request, which the action's conditions need.
    @inline(__always)
    private func withRequest<Result>(reading what: @autoclosure () -> String, _ body: (UnsafePointer<Request>) -> Result) -> Result {
        // A pattern, not `request != nil`: the generic comparison copied the whole request through its value witness.
        guard case .some = request else {
            preconditionFailure("InternedRequest.request is required for \(what()), which reads the request")
        }
        return withUnsafePointer(to: request) { optional in
            // The stored request lent, not bound to a copy (a copy retains and releases each of its strings and
            // collections): an optional's payload sits at the start of its storage, and it is present.
            body(UnsafeRawPointer(optional).assumingMemoryBound(to: Request.self))
        }
    }

    func withConditionInput<Result>(
        _ table: DecisionTable, entry: ActionEntry, now: Date, tier: Int, signedIn: Bool, role: Int32?, _ body: (EvaluationInput) -> Result
    ) -> Result {
        withRequest(reading: "\(entry.typeName).\(entry.plan.name)'s conditions") { pointer in
            // Conditions see the role by name, as the String-keyed request spells it.
            let name = entry.conditionsReadRole ? table.standing(pointer.pointee, signedIn: signedIn, entry: entry).role : nil
            return body(EvaluationInput(borrowing: pointer, now: now, effectiveTier: table.tiers[tier].id, signedIn: signedIn, resourceRole: name))
        }
    }
}

extension Dictionary where Key == String {
    /// `self[key]`, comparing keys one by one when there are few: a handful of String compares costs less than
    /// hashing the key with SipHash. Same answer: keys are unique under `==`, which both ways compare by.
    @inline(__always)
    func value(forSmall key: String) -> Value? {
        guard count <= 4 else { return self[key] }
        var index = startIndex
        // A small ASCII key equals another small ASCII key exactly when their words are equal.
        if let small = SmallName(key) {
            while index != endIndex {
                let candidate = keys[index]
                if let other = SmallName(candidate) {
                    if other == small { return values[index] }
                } else if candidate == key {
                    return values[index]
                }
                formIndex(after: &index)
            }
            return nil
        }
        while index != endIndex {
            if keys[index] == key { return values[index] }
            formIndex(after: &index)
        }
        return nil
    }
}
