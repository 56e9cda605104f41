import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// libFuzzer entry: bytes -> one request JSON (as `policy decide --jsonl` and an HTTP front door receive it)
/// -> `Request(json:)`, then `decide` and `explain` on every shipped policy set, and the request written back
/// to JSON and read again. A trap, a hang, a parse error without a field, a deny without a message, `explain`
/// disagreeing with `decide`, or a request whose own JSON no longer reads (or decides differently) is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let request: Request
    do {
        request = try Request(json: text)
    } catch {
        if error.description.isEmpty { fatalError("a refused request without a reason") }
        return 0
    }
    let written = request.json.rendered(pretty: false)
    let reread: Request
    do {
        reread = try Request(json: written)
    } catch {
        fatalError("a request's own JSON does not read back: \(error.description): \(written)")
    }
    for policy in FuzzPolicies.shipped {
        let decision = policy.decide(request)
        if decision.effect == .deny, (decision.message ?? "").isEmpty { fatalError("a deny without a message: \(written)") }
        if policy.explain(request).decision != decision { fatalError("explain disagrees with decide: \(written)") }
        if policy.decide(reread) != decision { fatalError("the request decides differently once written and read back: \(written)") }
    }
    return 0
}

/// The shipped sets, compiled once from the repository this target is built in.
enum FuzzPolicies {
    static let shipped: [CompiledPolicy] = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("policies").path
        let sets = PolicyCompiler.policySets(under: root).compactMap { PolicyCompiler.load(directory: $0).policy }
        precondition(sets.count == 3, "the fuzz target needs the shipped policy sets under \(root)")
        return sets
    }()
}
