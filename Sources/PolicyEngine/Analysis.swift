import Foundation
import PolicyModel

extension CompiledPolicy {
    /// Calls `body` with what a rule's condition sees for `request`: the facts `decide` derives (effective tier,
    /// sign-in, standing). For analysis tools (lint, invariants) that evaluate conditions outside a decision.
    /// Like `decide`, it lends the request to the input rather than copying it, so `body` must not keep the input.
    /// Returns nil when the policy does not know the request's resource type and action.
    package func withConditionInput<Result>(for request: Request, _ body: (EvaluationInput) -> Result) -> Result? {
        guard let slot = table.slot(type: request.resource.type, action: request.action) else { return nil }
        let subject = request.subject
        let signedIn = subject.isSignedIn
        let now = request.context.now ?? Date()
        let tier = effectiveTier(of: subject, signedIn: signedIn, now: now)
        let role = table.standing(request, signedIn: signedIn, entry: table.entries[slot]).role
        return withUnsafePointer(to: request) { pointer in
            body(EvaluationInput(borrowing: pointer, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role))
        }
    }
}
