// Release-build timings of the identity flows: `swift run -c release identity-bench`.
// Prints medians; nothing here is asserted by tests.
import Crypto
import Foundation
import Gatehouse
import _CryptoExtras

func median(_ samples: [Double]) -> Double {
    let s = samples.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func measure(_ label: String, runs: Int, _ body: () async throws -> Void) async rethrows {
    var samples: [Double] = []
    for _ in 0..<runs {
        let start = ContinuousClock.now
        try await body()
        let d = ContinuousClock.now - start
        samples.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
    }
    print(label.padding(toLength: 40, withPad: " ", startingAt: 0) + String(format: " median %9.3f ms  (n=%d, min %.3f, max %.3f)", median(samples), runs, samples.min()!, samples.max()!))
}

let dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: dir) }
let database = try AppDatabase(path: dir.appendingPathComponent("bench.sqlite").path)
let configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["bench"]))
let service = IdentityService(
    store: SQLiteStore(database), configuration: configuration,
    jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))

print("PBKDF2-SHA256 rounds: \(configuration.pin.rounds); synchronous = FULL; file in \(dir.path)")
await measure("KDF only (one PIN check, PBKDF2)", runs: 15) {
    _ = try! KDF.Insecure.PBKDF2.deriveKey(from: Array("1234".utf8), salt: Array(repeating: 7, count: 16), using: .sha256, outputByteCount: 32, rounds: configuration.pin.rounds)
}
try await measure("sign-in anonymous", runs: 200) { _ = try await service.signInAnonymously() }
_ = try await service.register(username: "bench_user", pin: "482913", source: .inProcess)
try await measure("sign-in username + PIN", runs: 15) { _ = try await service.signIn(username: "bench_user", pin: "482913", source: .inProcess) }
let tokens = try await service.signInAnonymously()
try await measure("session-token validation (read path)", runs: 2000) { _ = try await service.validate(accessToken: tokens.accessToken) }
try await measure("session token -> Subject", runs: 2000) { _ = try await service.subject(accessToken: tokens.accessToken) }
var current = tokens.refreshToken
try await measure("refresh (rotation)", runs: 200) {
    current = try await service.refresh(refreshToken: current).refreshToken
}

// Decide by token through the facade, on the shipped research-crawler set, for a stored project.
let policyDir = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "policies/research-crawler"
if let policy = PolicyCompiler.load(directory: policyDir).policy {
    let gate = GatehouseService(policy: policy, identity: service)
    let member = try await service.register(username: "bench_member", pin: "135792", source: .inProcess)
    let project = try await service.createSpace(accessToken: member.accessToken, name: "Bench", type: "project", inviteRole: "editor")
    let resource = Resource(type: "project", id: project.resourceId)
    try await measure("decide by token (stored project, view)", runs: 2000) {
        _ = try await gate.decide(token: member.accessToken, action: "view", resource: resource)
    }
    try await measure("decide by token (app feature gate)", runs: 2000) {
        _ = try await gate.decide(token: member.accessToken, action: "ai_suggestions", resource: Resource(type: "app"))
    }
    let request = Request(subject: try await service.subject(accessToken: member.accessToken), action: "view", resource: Resource(type: "project", ownerId: member.userId))
    await measure("engine decide alone (x1000 per sample)", runs: 200) {
        for _ in 0..<1000 { _ = policy.decide(request) }
    }
} else {
    print("no policy set at \(policyDir): run from the package root to time decide-by-token")
}
