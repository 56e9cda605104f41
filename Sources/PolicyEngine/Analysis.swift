import Foundation
import PolicyModel

extension CompiledPolicy {
    /// Calls `body` with what a rule's condition sees for `request`: the facts `decide` derives (effective tier,
    /// sign-in, standing). For analysis tools (lint, invariants) that evaluate conditions outside a decision.
    /// Like `decide`, it lends the request to the input rather than copying it, so `body` must not keep the input.
    /// Returns nil when the policy does not know the request's resource type.
    package func withConditionInput<Result>(for request: Request, _ body: (EvaluationInput) -> Result) -> Result? {
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
        return withUnsafePointer(to: request) { pointer in
            body(EvaluationInput(borrowing: pointer, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role))
        }
    }
}
