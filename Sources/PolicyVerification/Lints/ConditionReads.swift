import PolicyCompiler
import PolicyEngine
import PolicyModel

/// What a policy's compiled conditions (rules and consents) read and which string literals they compare each
/// value with, as `ConditionFacts` (the one place that works out what a condition reads) finds them.
struct ConditionReads {
    private(set) var reads: Set<SpaceSource> = []
    private var literalsBySource: [SpaceSource: Set<String>] = [:]
    /// Values some condition reads without comparing them to any literal: any name could match there.
    private var open: Set<SpaceSource> = []

    init(_ policy: CompiledPolicy) {
        for condition in policy.conditions {
            let facts = ConditionFacts(condition)
            reads.formUnion(facts.reads)
            for source in facts.reads.union(facts.literals.keys) {
                literalsBySource[source, default: []].formUnion(facts.strings(comparedWith: source))
                if !facts.isCompared(source) { open.insert(source) }
            }
        }
    }

    /// The string literals compared with any of `sources`; nil when a condition reads one of them without a literal.
    func literals(on sources: [SpaceSource]) -> Set<String>? {
        if sources.contains(where: open.contains) { return nil }
        return sources.reduce(into: Set<String>()) { $0.formUnion(literalsBySource[$1] ?? []) }
    }
}

/// The compiler's attribute scope, named apart from Foundation's `AttributeScope` for files that import both.
typealias DeclaredAttributeScope = AttributeScope
