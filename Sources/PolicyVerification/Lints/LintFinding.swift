import PolicyCompiler
import PolicyEngine
import PolicyModel

/// One finding of a lint over declarations: the data it found, and the message and help it renders, in one type.
///
/// Each lint lives in a file of its own (`UnusedFeature.swift`, ...) that states its reasoning at the top, finds its
/// findings and words them; its tests sit beside it in `Tests/PolicyVerificationTests/Lints/`. The warning it
/// renders is the same text whoever asks (`policy check`, the corpus, the CLI goldens).
protocol LintFinding: Sendable {
    /// The code its warnings carry.
    static var code: DiagnosticCode { get }
    /// Every finding of this kind in a set that loaded.
    static func find(in input: LintInput) -> [Self]
    /// The declared name at fault: the warning points at it.
    var at: Located<String> { get }
    /// What is wrong, naming the declaration.
    var message: String { get }
    /// What to do about it.
    var help: String { get }
}

extension LintFinding {
    /// The finding as the warning `policy check` shows.
    var diagnostic: Diagnostic { Diagnostic(.warning, Self.code, message, at: at.location, length: at.length, help: [help]) }

    /// The lint that reports every finding of this kind.
    static var rule: LintRule { LintRule(code: code) { input in find(in: input).map(\.diagnostic) } }
}

/// The lints that read declarations alone: things declared and never used.
///
/// Each errs on the side of silence: when a condition reads a name's path without comparing it to a literal
/// (`subject.tier == resource.attributes.tier`), every name of that kind counts as used.
enum DeclarationLints {
    static let all: [LintRule] = [
        UnusedFeature.rule, UnusedLimit.rule, UnusedMessage.rule, UnusedAppRole.rule, UnusedResourceRole.rule, UnusedAttribute.rule,
        UnusedTier.rule,
    ]

    /// The declared names (`declared`) that no action names in its `field`.
    static func unused(
        _ declared: [Located<String>], usedBy field: KeyPath<ActionDecl, Located<String>?>, in input: LintInput
    ) -> [Located<String>] {
        let used = Set(input.declarations.resourceTypes.flatMap { $0.actions.compactMap { $0[keyPath: field]?.value } })
        return declared.filter { !used.contains($0.value) }
    }
}
