// Writes a synthetic policy set: `policy-synth N DIR`, then `policy check DIR` or the benchmarks can load it.
import Foundation
import PolicySynth

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let count = Int(arguments.first!), count > 0 else {
    FileHandle.standardError.write(Data("usage: policy-synth RULES DIRECTORY\n".utf8))
    exit(64)
}
let set = SyntheticPolicySet(ruleCount: count, directory: arguments.last!)
do {
    try set.write(to: arguments.last!)
    print("wrote \(set.files.count) files, \(set.byteCount) bytes: \(set.ruleCount) rules, \(set.typeCount) resource types, \(set.featureCount) features, \(set.limitCount) limits")
} catch {
    FileHandle.standardError.write(Data("policy-synth: \(error)\n".utf8))
    exit(1)
}
