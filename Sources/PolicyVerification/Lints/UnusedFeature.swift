import PolicyCompiler
import PolicyModel

/// `unused-feature`: a feature no action needs.
///
/// A feature gates actions (`feature: export`); one that no action names gates nothing, so the tiers listing it
/// grant nothing by it. Conditions cannot name features, so the actions' `feature:` fields are the whole story.
struct UnusedFeature: LintFinding {
    static let code = DiagnosticCode.unusedFeature
    /// The feature's id as declared.
    let feature: Located<String>

    static func find(in input: LintInput) -> [UnusedFeature] {
        DeclarationLints.unused(input.declarations.features.map(\.id), usedBy: \.feature, in: input).map(UnusedFeature.init)
    }

    var at: Located<String> { feature }
    var message: String { "feature '\(feature.value)' is declared but no action needs it" }
    var help: String { "gate an action with `feature: \(feature.value)`, or remove the feature" }
}
