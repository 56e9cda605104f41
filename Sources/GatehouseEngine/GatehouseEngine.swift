// The engine-only library an app embeds: the decision contract's types, the compiler and the engine, with no
// identity, SQL or NIO in its dependency closure (GatehouseEngineTests walks the package graph to keep it so).
@_exported import PolicyBundle
@_exported import PolicyCompiler
@_exported import PolicyEngine
@_exported import PolicyModel

import Foundation

/// A policy set that did not compile: every diagnostic, errors first. The engine never runs a partial set.
public struct PolicyLoadFailure: Error, Sendable, CustomStringConvertible {
    /// Every error, warning and note the compiler reported.
    public let diagnostics: [Diagnostic]

    /// The errors alone.
    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }

    /// One line per error: `location: code: message`.
    public var description: String {
        errors.map { d in [d.location?.description, d.code, d.message].compactMap { $0 }.joined(separator: ": ") }
            .joined(separator: "\n")
    }
}

/// A denied decision, thrown by `Engine.check(_:)`; the decision carries the reason, message and upgrade tier.
public struct DecisionDenied: Error, Sendable, Hashable {
    /// The deny decision.
    public let decision: Decision
}

/// A compiled policy set and the warnings it compiled with: load it once, then decide with it from any thread.
public struct Engine: Sendable {
    /// The compiled policy set.
    public let policy: CompiledPolicy
    /// The warnings and notes the set compiled with (no errors: a set with errors does not load).
    public let diagnostics: [Diagnostic]

    /// An engine over a policy compiled elsewhere.
    public init(policy: CompiledPolicy, diagnostics: [Diagnostic] = []) {
        self.policy = policy
        self.diagnostics = diagnostics
    }

    /// The engine of a load result, or the failure with every diagnostic.
    public static func from(_ result: PolicyLoadResult) -> Result<Engine, PolicyLoadFailure> {
        guard let policy = result.policy else { return .failure(PolicyLoadFailure(diagnostics: result.diagnostics)) }
        return .success(Engine(policy: policy, diagnostics: result.diagnostics))
    }

    /// Loads every `.yaml`/`.yml` file under `directory` as one set. Locations name files relative to the folder.
    public init(directory: String) throws(PolicyLoadFailure) {
        self = try Self.from(PolicyCompiler.load(directory: directory, relativePaths: true)).get()
    }

    /// Loads the set in `folder`, a folder resource of `bundle` (copied with `.copy("policies")` in a package,
    /// or a folder reference in an Xcode target).
    public init(bundle: Bundle = .main, folder: String) throws(PolicyLoadFailure) {
        guard let base = bundle.resourceURL else {
            throw PolicyLoadFailure(diagnostics: [
                Diagnostic(.error, .notADirectory, "the bundle '\(bundle.bundlePath)' has no resource folder", at: nil)
            ])
        }
        try self.init(directory: base.appendingPathComponent(folder, isDirectory: true).path)
    }

    /// Compiles a set from file contents, keyed by the path diagnostics and locations name them by. No I/O.
    public init(name: String, files: [String: [UInt8]]) throws(PolicyLoadFailure) {
        let inputs = files.map { PolicyFileInput(path: $0.key, bytes: $0.value) }
        self = try Self.from(PolicyCompiler.compile(name: name, files: inputs)).get()
    }

    /// The decision for `request`.
    @inlinable
    public func decide(_ request: Request) -> Decision { policy.decide(request) }

    /// The decision for `request` and the trace of every check and rule considered.
    public func explain(_ request: Request) -> Explanation { policy.explain(request) }

    /// The decision when it allows; otherwise throws `DecisionDenied` with the deny decision.
    @discardableResult
    public func check(_ request: Request) throws(DecisionDenied) -> Decision {
        let decision = policy.decide(request)
        guard decision.isAllowed else { throw DecisionDenied(decision: decision) }
        return decision
    }
}
