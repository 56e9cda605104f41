import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

/// libFuzzer entry: bytes -> one or more policy files -> PolicyCompiler.compile, then, for a set that
/// compiles, a few requests on every action. Any trap, hang or runaway allocation is a finding; so is
/// a broken promise: the indexed and unindexed engine disagreeing, explain disagreeing with decide,
/// or a deny without a message.
///
/// The input is split into files at each line `#@file` (so a fuzzer can build sets of several files).
public func fuzzPolicyCompile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var files: [PolicyFileInput] = []
    var current: [UInt8] = []
    let marker = Array("#@file\n".utf8)
    var i = 0
    while i < bytes.count {
        if bytes[i...].starts(with: marker), files.count < 7 {
            files.append(PolicyFileInput(path: "fuzz/\(files.count).yaml", bytes: current))
            current = []
            i += marker.count
            continue
        }
        current.append(bytes[i])
        i += 1
    }
    files.append(PolicyFileInput(path: "fuzz/\(files.count).yaml", bytes: current))

    let result = PolicyCompiler.compile(name: "fuzz", files: files)
    // Rendering quotes the offending line with a caret: columns past the line's end must not trap.
    let renderer = DiagnosticRenderer(sources: result.sources)
    for diagnostic in result.diagnostics.prefix(50) {
        _ = renderer.text(diagnostic)
        _ = DiagnosticRenderer.json(diagnostic).rendered()
        _ = DiagnosticRenderer.github(diagnostic)
    }
    if result.diagnostics.contains(where: { $0.severity == .error }) != (result.policy == nil) {
        fatalError("a set with errors yielded an engine, or a clean set yielded none")
    }
    guard let policy = result.policy else { return 0 }

    let now = Date(timeIntervalSince1970: 1_795_348_800)
    let subjects = [
        Subject(),
        Subject(id: "u1", tier: policy.tierIDs.last, roles: ["admin", "customer"], auth: Authentication(method: "pin", verifiedAt: now - 60)),
        Subject(id: "u2", tier: policy.tierIDs.first, subscriptionExpiry: now - 1, auth: Authentication(method: "anonymous")),
        // Signed in but never verified: fails every auth need, so step-up messages are rendered.
        Subject(id: "u3", tier: "unknown", auth: Authentication(method: "apple")),
    ]
    var pairs = 0
    for type in policy.resourceTypeNames.prefix(10) {
        for action in policy.actionNames(of: type).prefix(10) {
            pairs += 1
            for (index, subject) in subjects.enumerated() {
                let resource = Resource(
                    type: type, id: "r1", ownerId: index == 1 ? "u1" : "u9", members: ["u2": "editor", "u1": "viewer"],
                    usage: ["sources": index == 0 ? Int.min : 50, "items": Int.max], attributes: ["createdBy": .string("u1"), "amount": .double(1)])
                let request = Request(subject: subject, action: action, resource: resource, context: Context(now: now, attributes: ["kiosk": .bool(true)]))
                let decision = policy.decide(request)
                if policy.decideUnindexed(request) != decision { fatalError("indexed and unindexed decisions differ for \(type).\(action)") }
                if policy.explain(request).decision != decision { fatalError("explain differs from decide for \(type).\(action)") }
                if decision.effect == .deny, decision.message?.isEmpty ?? true { fatalError("a deny without a message for \(type).\(action)") }
                _ = decision.json.rendered()
            }
        }
    }
    // Only the first ten types and actions are decided above; the promise is about the whole set (`no-actions`).
    if pairs == 0, !policy.resourceTypeNames.contains(where: { !policy.actionNames(of: $0).isEmpty }) {
        fatalError("a compiled set with no actions")
    }
    return 0
}
