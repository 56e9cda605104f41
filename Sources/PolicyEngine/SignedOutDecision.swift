import PolicyModel

extension CompiledPolicy {
    /// The deny for a caller whose session token was refused (unknown, expired or revoked), in the policy's words.
    ///
    /// The action's own `unauthenticated` decision when it requires sign-in, so a set's message (contacasal's
    /// Portuguese) and location are kept; else the built-in message for the reason. The facade and the server
    /// give this answer instead of deciding for a signed-out subject, so an app learns to refresh its session.
    public func signedOutDecision(resourceType: String, action: String) -> Decision {
        if let id = vocabulary.action(type: resourceType, action: action), let entry = vocabulary.entry(id),
            let decision = entry.denyDecision(.unauthenticated)
        {
            return decision
        }
        return Decision(effect: .deny, reason: .unauthenticated, message: DefaultMessages.text(for: .unauthenticated))
    }
}
