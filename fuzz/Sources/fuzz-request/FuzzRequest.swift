import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// libFuzzer entry: bytes -> one request JSON (as `policy decide --jsonl` and an HTTP front door receive it)
/// -> `Request(json:)` (the hand-written `RequestReader`), then `decide` and `explain` on every shipped policy
/// set, the decision written by `DecisionWriter` and by `JSONText`, and the request written back to JSON and
/// read again. A finding: a trap or hang; a refusal without a reason, or with an offset outside the input; a
/// request the reader accepts that Foundation's decoder refuses or reads differently; a deny without a message;
/// `explain` disagreeing with `decide`; the two decision writers disagreeing by a byte; a request whose own
/// JSON no longer reads (or decides differently).
public func fuzzRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let request: Request
    do {
        request = try RequestReader().read(bytes)
    } catch {
        if error.description.isEmpty { fatalError("a refused request without a reason") }
        if let offset = error.offset, offset < 0 || offset > size { fatalError("an error offset outside the input: \(error)") }
        return 0
    }
    // Whatever the strict reader accepts, Foundation's decoder must accept and read the same way (the reverse
    // does not hold: Foundation lets duplicate keys, overflowing integers and negative counts through).
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        let reference = try Request(value: Value.parseJSON(text))
        if reference != request { fatalError("the reader and Foundation read different requests: \(text)") }
    } catch {
        fatalError("the reader accepted what Foundation refuses (\(error.description)): \(text)")
    }
    let written = request.json.rendered(pretty: false)
    let reread: Request
    do {
        reread = try Request(json: written)
    } catch {
        fatalError("a request's own JSON does not read back: \(error.description): \(written)")
    }
    if !sameToTheMillisecond(reread, request) { fatalError("a request changed once written and read back: \(text) became \(written)") }
    for policy in FuzzPolicies.shipped {
        let decision = policy.decide(request)
        if decision.effect == .deny, (decision.message ?? "").isEmpty { fatalError("a deny without a message: \(written)") }
        if policy.explain(request).decision != decision { fatalError("explain disagrees with decide: \(written)") }
        if policy.decide(reread) != decision { fatalError("the request decides differently once written and read back: \(written)") }
        if decision.jsonBytes != Array(decision.json.rendered().utf8) { fatalError("the decision writers disagree: \(written)") }
    }
    return 0
}

/// Whether `a` and `b` are the same request, their times compared to the millisecond: the JSON writer writes times to
/// the millisecond (`Timestamp.format`), while the reader keeps the fraction it is given (up to nine digits).
func sameToTheMillisecond(_ a: Request, _ b: Request) -> Bool {
    func near(_ x: Date?, _ y: Date?) -> Bool {
        switch (x, y) {
        case (nil, nil): true
        case let (x?, y?): abs(x.timeIntervalSince(y)) < 0.001
        default: false
        }
    }
    var a2 = a
    guard near(a.subject.subscriptionExpiry, b.subject.subscriptionExpiry), near(a.subject.auth?.verifiedAt, b.subject.auth?.verifiedAt),
        near(a.context.now, b.context.now)
    else { return false }
    a2.subject.subscriptionExpiry = b.subject.subscriptionExpiry
    a2.subject.auth?.verifiedAt = b.subject.auth?.verifiedAt
    a2.context.now = b.context.now
    return a2 == b
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
