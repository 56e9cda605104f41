import Foundation
import FuzzSupport
import PolicyModel
import PolicySyntax
import Yams

/// libFuzzer entry for the policy YAML reader's safety scan (`YAMLSafetyScanner`, run by `YAMLLoader.load` before Yams
/// composes anything) and for Yams behind it, within the documented limits (`YAMLLimits`: 1 MiB, depth 64, 200,000
/// nodes; the first byte picks smaller limits now and then, so inputs of a few KB reach them). Besides a trap, hang or
/// memory growth, a finding is: a file the scan passes in which Yams finds an anchor or alias (the scan exists so that
/// alias bombs never reach the composer), or whose tree is deeper or larger than the limits; a tree and diagnostics
/// together, or neither; a diagnostic with a location outside the file (line 1 to lines + 1, column at least 1).
public func fuzzYAMLSafety(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    var limits = YAMLLimits()
    switch input.byte() % 4 {
    case 0:
        limits.maxDepth = 8
        limits.maxNodes = 64
    case 1: limits.maxFileBytes = 512
    default: break
    }
    let bytes = input.rest()
    let (file, node, diagnostics) = YAMLLoader.load(bytes: bytes, path: "fuzz.yaml", limits: limits)
    if (node == nil) == diagnostics.isEmpty { finding("a tree and diagnostics together, or neither (\(diagnostics.count) diagnostics)") }
    // libyaml counts lines at CR, LF, CRLF, NEL, LS and PS (YAML 1.1 line breaks), not only at LF.
    let text = String(decoding: bytes, as: UTF8.self)
    let lines = text.unicodeScalars.count { ["\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"].contains($0) } + 1
    for d in diagnostics {
        if d.message.isEmpty { finding("a diagnostic without a message") }
        if let at = d.location, at.file != "fuzz.yaml" || at.line < 1 || at.line > lines + 1 || at.column < 1 {
            finding("a diagnostic at \(at) in a file of \(lines) lines: \(d.message)")
        }
    }
    guard let node, let file else { return }
    var count = 0
    if depth(node, count: &count) > limits.maxDepth + 1 || count > limits.maxNodes { finding("a tree past the limits (\(count) nodes)") }
    // The scan passed: composing again must find no anchor or alias.
    guard let composed = try? Yams.compose(yaml: file.text, .basic) else { return }
    if let anchor = firstAnchor(composed) { finding("the safety scan passed a file with the anchor '\(anchor)'") }
}

func depth(_ node: SyntaxNode, count: inout Int) -> Int {
    count += 1
    switch node.kind {
    case .mapping(let entries): return 1 + (entries.map { max(depth($0.key, count: &count), depth($0.value, count: &count)) }.max() ?? 0)
    case .sequence(let items): return 1 + (items.map { depth($0, count: &count) }.max() ?? 0)
    default: return 1
    }
}

func firstAnchor(_ node: Node) -> String? {
    if let anchor = node.anchor { return anchor.rawValue }
    switch node {
    case .mapping(let mapping):
        for (key, value) in mapping { if let a = firstAnchor(key) ?? firstAnchor(value) { return a } }
    case .sequence(let sequence):
        for item in sequence { if let a = firstAnchor(item) { return a } }
    default: break
    }
    return nil
}
