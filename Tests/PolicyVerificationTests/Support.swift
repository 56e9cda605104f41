import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
@testable import PolicyVerification
import GatehouseTestSupport

/// Compiles an in-memory policy set from (file name, YAML) pairs; fails the test on any error.
func load(_ files: [(String, String)], name: String = "test") -> PolicyLoadResult {
    PolicyCompiler.compile(name: name, files: files.map { PolicyFileInput(path: $0.0, bytes: Array($0.1.utf8)) })
}

func load(_ yaml: String) -> PolicyLoadResult { load([("policy.yaml", yaml)]) }

/// The shipped policy sets, found from this file's place in the repository.
let repositoryRoot = Repository.root.path

func shipped(_ name: String) -> PolicyLoadResult { PolicyCompiler.load(directory: repositoryRoot + "/policies/" + name) }

extension Array where Element == Diagnostic {
    func codes() -> [String] { map(\.code) }
}
