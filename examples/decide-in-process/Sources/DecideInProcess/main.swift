import Foundation
import Gatehouse

// Load once at start-up; a set with errors yields no policy, only diagnostics.
let folder = CommandLine.arguments.dropFirst().first ?? "../../policies/research-crawler"
let loaded = PolicyCompiler.load(directory: folder)
guard let policy = loaded.policy else {
    for d in loaded.diagnostics { print("\(d.location?.description ?? folder): \(d.severity.rawValue): \(d.message) [\(d.code)]") }
    exit(1)
}
print("loaded \(policy.name) (sha256 \(policy.contentHash.prefix(12))...)")

// Typed requests: no JSON on the hot path.
let freeUser = Subject(id: "user-1", tier: "free", auth: Authentication(method: "apple"))
let requests = [
    Request(subject: freeUser, action: "ai_suggestions", resource: Resource(type: "app")),
    Request(subject: freeUser, action: "add_source", resource: Resource(type: "app", usage: ["sources": 50])),
    Request(subject: freeUser, action: "edit", resource: Resource(type: "project", ownerId: "user-2", members: ["user-1": "editor"])),
]
for request in requests {
    let d = policy.decide(request)
    print("\(request.action): \(d.effect.rawValue) (\(d.reason.rawValue))\(d.message.map { " - \($0)" } ?? "")")
}

// A rough in-process timing; the benchmark package under Benchmarks/ is the real measurement.
let mix = requests + [Request(subject: freeUser, action: "view", resource: Resource(type: "project", ownerId: "user-1"))]
let rounds = 200_000
var allowed = 0
let clock = ContinuousClock()
let elapsed = clock.measure {
    for i in 0..<rounds where policy.decide(mix[i & 3]).isAllowed { allowed += 1 }
}
let ns = Double(elapsed.components.attoseconds) / 1e9 + Double(elapsed.components.seconds) * 1e9
print(String(format: "%d decisions in %.1f ms: %.0f ns each, %.2f M/s (allowed %d)", rounds, ns / 1e6, ns / Double(rounds), Double(rounds) / ns * 1e3, allowed))
