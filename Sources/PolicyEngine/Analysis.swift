import Foundation
import PolicyModel

extension CompiledPolicy {
    /// What a rule's condition sees for `request`: the same facts `decide` derives (effective tier, sign-in,
    /// standing). For analysis tools (coverage, lint) that evaluate conditions outside a decision.
    package func conditionInput(for request: Request) -> EvaluationInput? {
        guard let type = resourceTypes[request.resource.type] else { return nil }
        let subject = request.subject
        let signedIn = subject.isSignedIn
        let now = request.context.now ?? Date()
        let tier = effectiveTier(of: subject, signedIn: signedIn, now: now)
        let role = standing(of: subject, signedIn: signedIn, on: request.resource, type: type).role
        return EvaluationInput(request: request, now: now, effectiveTier: tiers[tier].id, signedIn: signedIn, resourceRole: role)
    }
}
