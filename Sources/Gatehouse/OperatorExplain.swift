import Foundation
import Identity
import PolicyEngine
import PolicyModel

/// "Why was this denied": a decision for a user, now, as the user's own app would get it (issue 43).
extension GatehouseService {
    /// What `explain(forUser:...)` answers: the explanation, the request the engine judged (the user's own facts), and
    /// the session the subject came from (nil: the user has no live session, so a real decision would be
    /// `unauthenticated`, which is what the explanation says).
    package struct UserExplanation: Sendable {
        package var explanation: Explanation
        package var request: Request
        package var sessionId: String?
    }

    /// The decision with its trace for user `userId` taking `request`'s action on its resource, resolved the way a
    /// bearer's decision is (`decide(token:...)`): the subject from the user's live session (`sessionId`'s, else the
    /// one seen last) and the store's facts, the resource's owner, members and usage from the store, time from the
    /// identity clock, the policy serving now. A subject the request names is ignored. Not recorded in the decision log
    /// and not counted as a decision: it is the operator's question, not the user's.
    package func explain(
        forUser userId: String, sessionId: String? = nil, _ request: Request, operator credential: OperatorCredential, by policy: CompiledPolicy? = nil
    ) async throws -> UserExplanation {
        let policy = policy ?? self.policy
        let t = identity.clock()
        let live = try await identity.liveSessionFacts(userId: userId, sessionId: sessionId, operator: credential)
        var asked = request
        asked.subject = Subject()
        let bearer: BearerFacts = live.map { .live($0.facts) } ?? .refused
        let resolved = try await subjects.resolve(asked, bearer: bearer, at: t, by: policy)
        return UserExplanation(explanation: explain(resolved, by: policy), request: resolved.request, sessionId: live?.id)
    }

    /// The request of decision record `id` (its action, resource type, id and attributes, context attributes),
    /// explained again now for `userId` by `explain(forUser:...)`. `invalid_input` on `decisionId` when the record's
    /// subject is not that user.
    package func explainAgain(
        decisionId id: Int64, forUser userId: String, sessionId: String? = nil, operator credential: OperatorCredential
    ) async throws -> (UserExplanation, OperatorDecisionRecord) {
        let record = try await identity.decisionRecord(id: id, userId: userId, operator: credential)
        guard record.isUsers else { throw IdentityError(.invalidInput, field: "decisionId", "is not a decision record of this user") }
        var request = Request(action: record.action, resource: Resource(type: record.resourceType, id: record.resourceId))
        if let facts = record.facts, let recorded = try? Request(json: facts) {
            request.resource.attributes = recorded.resource.attributes
            request.context.attributes = recorded.context.attributes
        }
        return (try await explain(forUser: userId, sessionId: sessionId, request, operator: credential), record)
    }
}
