import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicySyntax

/// The outcome of one policy test written in a policy folder's `tests:` section.
public struct PolicyTestResult: Sendable, Hashable {
    public var name: String
    public var location: SourceLocation
    /// Empty when the test passed; otherwise one line per expectation that did not hold.
    public var failures: [String]
    /// The decision the engine gave, nil when the request itself could not be read.
    public var decision: Decision?
    /// The request the test asked, nil when it could not be read.
    public var request: Request?
    /// Every check and rule the engine considered for the request, in words.
    public var trace: [TraceStep]
    /// The same as the engine's events: coverage is counted from these, never from the words.
    package var events: [TraceEvent] = []

    public var passed: Bool { failures.isEmpty }

    public init(
        name: String, location: SourceLocation, failures: [String], decision: Decision?, request: Request? = nil, trace: [TraceStep] = []
    ) {
        self.name = name
        self.location = location
        self.failures = failures
        self.decision = decision
        self.request = request
        self.trace = trace
    }
}

/// Runs the tests a policy set declares against its compiled policy.
public enum PolicyTestRunner {
    public static func run(_ result: PolicyLoadResult) -> [PolicyTestResult] {
        guard let policy = result.policy else { return [] }
        return result.declarations.tests.map { run($0, policy: policy) }
    }

    /// One line per failing test (`file:line:col: error: policy test 'name' fails: ...`), empty when all pass: what
    /// a strict reload of `policy serve` refuses a set with.
    public static func failureLines(_ result: PolicyLoadResult) -> [String] {
        run(result).filter { !$0.passed }.map { "\($0.location): error: policy test '\($0.name)' fails: \($0.failures.joined(separator: "; "))" }
    }

    static func run(_ test: TestDecl, policy: CompiledPolicy) -> PolicyTestResult {
        let request: Request
        do {
            request = try Request(value: test.request.value)
        } catch {
            let location = test.request.locate(field: error.field)
            return PolicyTestResult(
                name: test.name, location: location, failures: ["request is invalid: \(error.description) (at \(location))"], decision: nil)
        }
        // `explain` decides exactly as `decide` does and also keeps the trace coverage needs.
        let explanation = policy.explain(request)
        let decision = explanation.decision
        var failures: [String] = []
        let expect = test.expect
        func compare<T: Equatable>(_ field: String, _ expected: Located<T>?, _ actual: T?, _ show: (T?) -> String) {
            guard let expected, expected.value != actual else { return }
            failures.append("\(field): expected \(show(expected.value)), got \(show(actual)) (expected at \(expected.location))")
        }
        compare("decision", expect.effect, decision.effect) { $0?.rawValue ?? "nothing" }
        compare("reason", expect.reason, decision.reason.rawValue) { $0 ?? "nothing" }
        compare("message", expect.message, decision.message) { $0.map { "\"\($0)\"" } ?? "no message" }
        compare("upgradeTo", expect.upgradeTo, decision.upgradeTo) { $0 ?? "none" }
        compare("limit", expect.limit, decision.limit) { $0.map(String.init) ?? "none" }
        compare("used", expect.used, decision.used) { $0.map(String.init) ?? "none" }
        compare("remaining", expect.remaining, decision.remaining) { $0.map(String.init) ?? "none" }
        var result = PolicyTestResult(
            name: test.name, location: test.location, failures: failures, decision: decision, request: request, trace: explanation.trace)
        result.events = explanation.events
        return result
    }
}

extension SyntaxNode {
    /// The node at a request field path such as `subject.auth.verifiedAt` or `subject.roles[1]`;
    /// the deepest node found when the path leaves the tree (a missing field points at its parent).
    func locate(field: String) -> SourceLocation {
        var node = self
        for part in field.split(separator: ".") {
            var name = part
            var index: Int?
            if let open = part.firstIndex(of: "["), part.hasSuffix("]") {
                name = part[..<open]
                index = Int(part[part.index(after: open)..<part.index(before: part.endIndex)])
            }
            guard case .mapping(let entries) = node.kind, let entry = entries.first(where: { $0.key.text == String(name) }) else {
                return node.location
            }
            node = entry.value
            if let index {
                guard case .sequence(let items) = node.kind, items.indices.contains(index) else { return node.location }
                node = items[index]
            }
        }
        return node.location
    }
}
