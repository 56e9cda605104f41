import PolicyCompiler
import PolicyEngine
import PolicyModel

/// `unused-message`: a message that no decision can ever show.
///
/// A deny shows the most specific message for its reason: a deny rule's own, else the action's, the resource
/// type's, then the set's. A message is shown when some action resolves one of its reasons to it; one that every
/// such action overrides, or whose reason no action in its scope can give, is dead text. `allowed` carries no
/// message, and `default_deny` is read from the set's top level only.
struct UnusedMessage: LintFinding {
    static let code = DiagnosticCode.unusedMessage

    /// Why the message is never shown.
    enum Cause: Sendable, Hashable {
        /// It is for `allowed`, which carries no message.
        case allowedCarriesNone
        /// A `default_deny` message below the set's top level.
        case defaultDenyNotTopLevel
        /// Every action in `scope` that can give the reason shows a more specific message.
        case overridden(scope: String)
        /// No action in `scope` can be denied with the reason.
        case neverGiven(scope: String)
    }

    /// The message's reason key as written.
    let reason: Located<String>
    let cause: Cause

    static func find(in input: LintInput) -> [UnusedMessage] {
        let policy = input.policy
        var shown: Set<SourceLocation> = []
        if let location = policy.defaultDenyMessage.location { shown.insert(location) }
        /// Per resource type, per action: the reasons it can be denied with (each resolved to one message).
        var reasonsOf: [String: [String: Set<Reason>]] = [:]
        for typeName in policy.resourceTypeNames {
            guard let type = policy.resourceTypes[typeName] else { continue }
            for (actionName, action) in type.actions {
                reasonsOf[typeName, default: [:]][actionName] = Set(action.messages.keys)
                for (reason, template) in action.messages {
                    // A deny rule with a message of its own shows that one, not the action's `denied_by_rule` text.
                    if reason == .deniedByRule, !action.denyRules.contains(where: { policy.rules[$0].message == nil }) { continue }
                    if let location = template.location { shown.insert(location) }
                }
            }
        }

        var findings: [UnusedMessage] = []
        func check(_ decls: [MessageDecl], scope: String, reasons: [Set<Reason>], topLevel: Bool) {
            for decl in decls where !shown.contains(decl.text.location) {
                guard let reason = Reason(rawValue: decl.reason.value) else { continue }
                let cause: Cause
                if reason == .allowed {
                    cause = .allowedCarriesNone
                } else if reason == .defaultDeny, !topLevel {
                    cause = .defaultDenyNotTopLevel
                } else if reasons.contains(where: { $0.contains(reason) }) {
                    cause = .overridden(scope: scope)
                } else {
                    cause = .neverGiven(scope: scope)
                }
                findings.append(UnusedMessage(reason: decl.reason, cause: cause))
            }
        }
        let all = reasonsOf.values.flatMap(\.values)
        check(input.declarations.messages, scope: "the set", reasons: Array(all), topLevel: true)
        for type in input.declarations.resourceTypes {
            let actions = reasonsOf[type.id.value] ?? [:]
            check(type.messages, scope: "'\(type.id.value)'", reasons: Array(actions.values), topLevel: false)
            for action in type.actions {
                check(
                    action.messages, scope: "'\(type.id.value).\(action.id.value)'", reasons: actions[action.id.value].map { [$0] } ?? [],
                    topLevel: false)
            }
        }
        return findings
    }

    var at: Located<String> { reason }
    var message: String { "message for '\(reason.value)' is never shown" }
    var help: String {
        let why =
            switch cause {
            case .allowedCarriesNone:
                "an allowed decision carries no message"
            case .defaultDenyNotTopLevel:
                "'default_deny' messages are read only from the set's top-level `messages:`"
            case .overridden(let scope):
                "every action in \(scope) that can give '\(reason.value)' shows a more specific message (its own, its resource type's, or a deny rule's)"
            case .neverGiven(let scope):
                "no action in \(scope) can be denied with '\(reason.value)'"
            }
        return why + "; remove it"
    }
}
