import Crypto
import Foundation
import PolicyModel
import Synchronization

/// One decision to record, as the facade hands it to the store: the request exactly as the engine judged it (the
/// subject from the session, the resource's facts from the store, the time) and what the engine answered.
///
/// Holds user ids in the clear until `IdentityService.writeDecisionRecords(_:)` pseudonymises them; never a token or
/// a PIN (a request has no field for either).
public struct DecisionRecordDraft: Sendable {
    /// The request as decided.
    public var request: Request
    /// `allow` or `deny`.
    public var effect: String
    /// The decision's reason (`allowed`, `limit_exceeded`, ...).
    public var reason: String
    /// The content hash of the policy version that decided.
    public var policyHash: String
    /// Where in the policy files the deciding rule is, when one is.
    public var policyLocation: String?
    /// The subject came from a session (a bearer), so its id is a user of the store: a record whose user is gone by
    /// the time it is written (deleted in between) is written as an erasure leaves it, without subject and facts.
    public var fromSession: Bool

    /// A record of `request`'s decision by the policy version `policyHash`.
    public init(request: Request, effect: String, reason: String, policyHash: String, policyLocation: String?, fromSession: Bool) {
        self.request = request
        self.fromSession = fromSession
        self.effect = effect
        self.reason = reason
        self.policyHash = policyHash
        self.policyLocation = policyLocation
    }
}

/// The keyed pseudonyms of decision records: HMAC-SHA256 of a user id under the deployment's key (`decisionKey`, drawn
/// by the migration), so one user has one pseudonym across records and replicas, an owner or member pseudonym matches
/// the subject pseudonym it stands for (a replayed ownership check holds), and nobody without the key can compute one
/// from an id.
public struct DecisionPseudonyms: Sendable {
    /// The HMAC keyed and fed the domain prefix once; each pseudonym continues a copy of it (the key's two pad blocks
    /// and the prefix are not hashed again per id).
    private let keyed: HMAC<SHA256>

    package init(key: Data) {
        var keyed = HMAC<SHA256>(key: SymmetricKey(data: key))
        keyed.update(data: Array("gatehouse.decision.user|".utf8))
        self.keyed = keyed
    }

    /// The pseudonym of user id `id`: `u-` and 32 hex digits.
    public func pseudonym(_ id: String) -> String {
        var mac = keyed
        var id = id
        id.withUTF8 { mac.update(data: UnsafeRawBufferPointer($0)) }
        return "u-" + SecretCoding.hex(mac.finalize().prefix(16))
    }

    /// `request` with every user id it holds replaced by its pseudonym: the subject's id, the resource's owner and the
    /// member keys. Resource ids, attributes and usage are kept as decided.
    public func pseudonymised(_ request: Request) -> Request {
        var memo = Memo()
        return pseudonymised(request, memo: &memo)
    }

    /// Pseudonyms already computed, by user id: a batch of records names the same few users many times.
    struct Memo {
        var known: [String: String] = [:]
    }

    /// The pseudonym of `id`, computed once per memo.
    func pseudonym(_ id: String, memo: inout Memo) -> String {
        if let known = memo.known[id] { return known }
        let made = pseudonym(id)
        memo.known[id] = made
        return made
    }

    /// `pseudonymised(_:)`, remembering the pseudonyms in `memo`.
    func pseudonymised(_ request: Request, memo: inout Memo) -> Request {
        var r = request
        if let id = r.subject.id, !id.isEmpty { r.subject.id = pseudonym(id, memo: &memo) }
        if let owner = r.resource.ownerId, !owner.isEmpty { r.resource.ownerId = pseudonym(owner, memo: &memo) }
        if !r.resource.members.isEmpty {
            r.resource.members = Dictionary(r.resource.members.map { (pseudonym($0.key, memo: &memo), $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        return r
    }
}

/// The deployment's pseudonym key, read from the store once.
final class DecisionKeyCache: Sendable {
    private let cached = Mutex<DecisionPseudonyms?>(nil)

    func pseudonyms(_ store: any IdentityStore) async throws -> DecisionPseudonyms {
        if let known = cached.withLock({ $0 }) { return known }
        guard let row = try await store.read({ tx in try await tx.fetchOne(DecisionKeyRow.self, "id", .int(1)) }) else {
            throw IdentityError(.storage, field: "database", "the decision record key is missing (migration v18-decision-records)")
        }
        let made = DecisionPseudonyms(key: row.key)
        cached.withLock { $0 = made }
        return made
    }
}

extension IdentityService {
    /// The longest `facts` a decision record keeps (UTF-8 bytes of the request's JSON); a longer request (attributes a
    /// caller padded) is recorded without its facts, which `policy replay` reports as a record it cannot decide.
    public static let maxRecordedFactsLength = 16 * 1024

    /// The deployment's keyed pseudonyms (the key is read from the store once).
    public func decisionPseudonyms() async throws -> DecisionPseudonyms {
        try await decisionKeys.pseudonyms(store)
    }

    /// Appends `drafts` to the decision log in one transaction: each with the user's audit pseudonym as `actor` (what
    /// export and erasure find it by), the subject's keyed pseudonym, and the request as decided with every user id
    /// pseudonymised. Strings the caller chose (action, resource type and id) are cut to `maxLoggedLength` bytes in the
    /// row's columns; `facts` keeps them whole up to `maxRecordedFactsLength`.
    public func writeDecisionRecords(_ drafts: [DecisionRecordDraft]) async throws {
        guard !drafts.isEmpty else { return }
        let names = try await decisionPseudonyms()
        let t = now()
        var memo = DecisionPseudonyms.Memo()
        // What each record takes from the key, made before the transaction; the rows are made once inside it, when the
        // actors are known (made outside and amended inside, each row was copied twice and destroyed once: about 1,000
        // instructions a record, callgrind).
        let keyed: [KeyedParts] = drafts.map { d in
            let userId = d.request.subject.id.flatMap { $0.isEmpty ? nil : $0 }
            let facts = RequestWriter.text(d.request) { names.pseudonym($0, memo: &memo) }
            return KeyedParts(
                userId: userId, subject: userId.map { names.pseudonym($0, memo: &memo) },
                facts: facts.utf8.count <= Self.maxRecordedFactsLength ? facts : nil)
        }
        // The batch's users in one statement: a lookup per user was a round trip each on PostgreSQL, inside the
        // transaction, and a thousand users deciding at once held the writer to about 1,000 records a second.
        // An id holding U+0000 is no user's (ids are UUIDs), and PostgreSQL refuses it as a parameter (22021), which
        // would fail the whole batch: it is not looked up.
        let userIds = Set(keyed.compactMap(\.userId)).filter { !Self.holdsNUL($0) }.sorted()
        try await store.write { tx in
            var actors: [String: String] = [:]
            if !userIds.isEmpty {
                for user in try await tx.fetch(StoreRead<UserRow>(filter: [.init(column: "id", oneOf: userIds.map { .text($0) })])) {
                    actors[user.id] = user.pseudonym
                }
            }
            var written: [DecisionLogRow] = []
            written.reserveCapacity(drafts.count)
            // By index, reading the drafts' fields in place: a `zip` of the two arrays copied each draft out (its request
            // and every string in it retained, then released).
            for i in drafts.indices {
                let actor = keyed[i].userId.flatMap { actors[$0] }
                // A session's user gone by the time the record is written (deleted in between): written as an erasure
                // leaves it, without subject, facts or resource id.
                let erased = drafts[i].fromSession && keyed[i].userId != nil && actor == nil
                written.append(DecisionLogRow(
                    id: nil, at: drafts[i].request.context.now ?? t, actor: actor, action: Self.bounded(drafts[i].request.action),
                    resourceType: Self.bounded(drafts[i].request.resource.type),
                    resourceId: erased ? nil : drafts[i].request.resource.id.map(Self.bounded),
                    effect: Self.bounded(drafts[i].effect), reason: Self.bounded(drafts[i].reason),
                    policyHash: Self.bounded(drafts[i].policyHash), policyLocation: drafts[i].policyLocation.map(Self.bounded),
                    subject: erased ? nil : keyed[i].subject, facts: erased ? nil : keyed[i].facts))
            }
            try await tx.insertAll(written)
        }
    }

    /// A record's parts that take the pseudonym key: the user id (in the clear, to find the actor), the subject's
    /// pseudonym and the facts with every user id pseudonymised (nil when too long to keep).
    private struct KeyedParts: Sendable {
        let userId: String?
        let subject: String?
        let facts: String?
    }
}
