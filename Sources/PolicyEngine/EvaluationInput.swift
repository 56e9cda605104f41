import Foundation
import PolicyModel

/// What a compiled condition can see: the request plus the facts the engine derived from it.
///
/// The engine fills this once per decision; conditions read it without string lookups where the
/// compiler could resolve the path ahead of time.
package struct EvaluationInput {
    package let request: Request
    /// `context.now`, or the clock's now when the request gave none.
    package let now: Date
    /// The tier the policy applies: the subject's own while signed in, known and unexpired, else the default.
    package let effectiveTier: String
    package let signedIn: Bool
    /// The subject's role on the resource: the owner role for the owner, the member role, or nil.
    package let resourceRole: String?

    package init(request: Request, now: Date, effectiveTier: String, signedIn: Bool, resourceRole: String?) {
        self.request = request
        self.now = now
        self.effectiveTier = effectiveTier
        self.signedIn = signedIn
        self.resourceRole = resourceRole
    }
}
