import PolicyCompiler
import PolicyModel

/// `unused-tier`: a tier that no feature, product or condition names, so it grants nothing.
///
/// A tier is named by a feature's `tiers:` or `upgradeTo:`, by a store product mapped to it, by being the default,
/// or by a condition comparing `subject.tier` with it. The lint runs only with more than one tier and no limits: a
/// tier left out of a limit is unlimited there, so with limits leaving a tier unnamed says something. A condition
/// reading `subject.tier` without a literal silences it.
struct UnusedTier: LintFinding {
    static let code = DiagnosticCode.unusedTier
    /// The tier's id as declared.
    let tier: Located<String>

    static func find(in input: LintInput) -> [UnusedTier] {
        let d = input.declarations
        guard d.tiers.count > 1, d.limits.isEmpty, let compared = ConditionReads(input.policy).literals(on: [.field(.subjectTier)]) else { return [] }
        var named = compared
        named.insert(input.policy.defaultTierID)
        for feature in d.features {
            named.formUnion(feature.tiers.map(\.value))
            if let upgrade = feature.upgradeTo { named.insert(upgrade.value) }
        }
        for tier in d.tiers where !tier.products.isEmpty { named.insert(tier.id.value) }
        return d.tiers.filter { !named.contains($0.id.value) }.map { UnusedTier(tier: $0.id) }
    }

    var at: Located<String> { tier }
    var message: String { "tier '\(tier.value)' is declared but no feature, product or condition names it, so it grants nothing" }
    var help: String { "list it in a feature's `tiers:` or map a store product to it, or remove it" }
}
