import Foundation
import PolicyModel

extension CompiledPolicy {
    /// What a rule's condition sees for `request`: the facts `decide` derives (effective tier, sign-in, standing),
    /// over a copy of the request. For analysis tools (lint, invariants) that evaluate conditions outside a decision;
    /// `decide` itself lends the request instead.
    package func conditionInput(for request: Request) -> EvaluationInput? {
        guard let type = resourceTypes[request.resource.type] else { return nil }
        let subject = request.subject
        let signedIn = subject.isSignedIn
        let now = request.context.now ?? Date()
        let tier = effectiveTier(of: subject, signedIn: signedIn, now: now)
        var role: String?
        if signedIn, let id = subject.id {
            if let owner = type.owner, owner.read(request.resource) == id {
                role = type.ownerRole ?? "owner"
            } else {
                role = request.resource.members[id]
            }
        }
        return EvaluationInput(request: request, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role)
    }
}
