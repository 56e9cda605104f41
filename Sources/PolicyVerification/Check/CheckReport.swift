import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// How `policy check` judges a set.
public struct CheckOptions: Sendable, Hashable {
    /// Warnings (lints, invariant warnings) count as errors.
    public var strict: Bool
    /// Measure which rules, condition branches and requirement outcomes the policy tests exercise.
    public var coverage: Bool
    /// Fail a set whose coverage is below this percentage (0...100); implies `coverage`.
    public var minCoverage: Double?

    public init(strict: Bool = false, coverage: Bool = false, minCoverage: Double? = nil) {
        self.strict = strict
        self.coverage = coverage || minCoverage != nil
        self.minCoverage = minCoverage
    }
}

/// The exit status of `policy check`: the worst outcome over every set.
public enum CheckOutcome: Int32, Sendable, Comparable {
    /// Every set loads, has no errors (warnings too under `--strict`), passes its tests, invariants and coverage minimum.
    case clean = 0
    /// A set does not load, or has errors (warnings too under `--strict`).
    case policyErrors = 1
    /// A policy test fails, an invariant does not hold, or coverage is below the minimum.
    case failures = 2

    public static func < (a: CheckOutcome, b: CheckOutcome) -> Bool {
        // Policy errors outrank failures: a set that does not load cannot be tested.
        a.rank < b.rank
    }

    private var rank: Int {
        switch self {
        case .clean: 0
        case .failures: 1
        case .policyErrors: 2
        }
    }
}

/// Everything `policy check` found in one policy set; `CheckRunner` makes it (its memberwise initialiser is internal).
public struct SetReport: Sendable {
    /// The set's folder, as given on the command line.
    public var path: String
    public var result: PolicyLoadResult
    /// Load, lint and invariant diagnostics in reading order; under `--strict`, warnings made errors.
    public var diagnostics: [Diagnostic]
    /// The diagnostics that `--strict` made errors (JUnit reports them as failures rather than errors).
    public var promoted: Set<Diagnostic>
    public var tests: [PolicyTestResult]
    public var invariants: InvariantReport
    /// nil unless coverage was asked for, or when the set did not load.
    public var coverage: CoverageReport?
    public var minCoverage: Double?
    /// Seconds spent on the set: loading, tests, lints, invariants.
    public var seconds: Double

    public var loaded: Bool { result.policy != nil }
    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }
    public var warnings: [Diagnostic] { diagnostics.filter { $0.severity == .warning } }
    public var failedTests: [PolicyTestResult] { tests.filter { !$0.passed } }
    public var failedInvariants: [InvariantResult] { invariants.results.filter { !$0.passed } }
    /// True when a minimum was set and the measured coverage is below it.
    public var coverageBelowMinimum: Bool {
        guard let minCoverage, let coverage else { return false }
        return coverage.percent < minCoverage
    }

    public var outcome: CheckOutcome {
        if !loaded || !errors.isEmpty { return .policyErrors }
        if !failedTests.isEmpty || !failedInvariants.isEmpty || coverageBelowMinimum { return .failures }
        return .clean
    }

    /// The set's folder name, e.g. `research-crawler`.
    public var name: String {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        return trimmed.split(separator: "/").last.map(String.init) ?? trimmed
    }
}

/// The result of `policy check` over one or more sets, renderable as text, JSON, GitHub annotations or JUnit XML.
public struct CheckReport: Sendable {
    public var sets: [SetReport]
    public var options: CheckOptions

    public init(sets: [SetReport], options: CheckOptions) {
        self.sets = sets
        self.options = options
    }

    public var outcome: CheckOutcome { sets.map(\.outcome).max() ?? .clean }
}

/// Runs `policy check` on policy sets: load, lint, test, prove invariants, measure coverage.
public enum CheckRunner {
    /// Checks every policy set under each folder (see `PolicyCompiler.policySets(under:)`).
    public static func check(directories: [String], options: CheckOptions = CheckOptions()) -> CheckReport {
        let sets = directories.flatMap { PolicyCompiler.policySets(under: $0) }
        return CheckReport(sets: sets.map { check(setAt: $0, options: options) }, options: options)
    }

    /// Loads and checks the policy set in one folder.
    public static func check(setAt path: String, options: CheckOptions = CheckOptions()) -> SetReport {
        let start = ContinuousClock.now
        let result = PolicyCompiler.load(directory: path)
        return check(result, path: path, options: options, since: start)
    }

    /// Checks an already loaded set (from files or from memory, as `policy serve` reloads do).
    public static func check(_ result: PolicyLoadResult, path: String, options: CheckOptions = CheckOptions()) -> SetReport {
        check(result, path: path, options: options, since: ContinuousClock.now)
    }

    private static func check(_ result: PolicyLoadResult, path: String, options: CheckOptions, since start: ContinuousClock.Instant) -> SetReport {
        let tests = PolicyTestRunner.run(result)
        var invariants = InvariantReport()
        var coverage: CoverageReport?
        var found = result.diagnostics
        if let policy = result.policy {
            found += PolicyLinter.lint(result)
            invariants = InvariantProver.prove(result)
            found += invariants.diagnostics
            if options.coverage { coverage = Coverage.measure(policy, tests: tests) }
        }
        var diagnostics: [Diagnostic] = []
        var promoted: Set<Diagnostic> = []
        for var d in found.sortedForDisplay() {
            if options.strict, d.severity == .warning {
                d.severity = .error
                d.notes.append((nil, "a warning, made an error by --strict"))
                promoted.insert(d)
            }
            diagnostics.append(d)
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return SetReport(
            path: path, result: result, diagnostics: diagnostics, promoted: promoted, tests: tests, invariants: invariants,
            coverage: coverage, minCoverage: options.minCoverage, seconds: seconds)
    }
}
