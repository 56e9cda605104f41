// Release-build timings of the identity flows: `swift run -c release identity-bench [POLICY_DIR]`.
// `--enumeration [N]` instead times wrong-PIN sign-ins for known, unknown and legacy-hash usernames
// (N attempts each, default 1,000) to show they cannot be told apart by time.
// `--database postgres://USER@HOST:PORT/DB?schema=NAME` runs the main timings on PostgreSQL (the schema is
// migrated, and keeps the bench's rows: use a throwaway one) instead of a SQLite file in a temporary folder.
// Prints medians; nothing here is asserted by tests.
import Crypto
import Foundation
import Gatehouse
import IdentityPostgres
import Synchronization
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

func milliseconds(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }

func percentile(_ samples: [Double], _ p: Double) -> Double {
    let s = samples.sorted()
    return s[min(s.count - 1, Int(Double(s.count) * p))]
}

/// Wrong-PIN sign-ins, interleaved: known usernames, unknown ones, and known ones with a legacy hash.
/// A test clock moves two days before each attempt, so no delay or limit ever answers instead of the
/// check; each known user takes at most N/20 failures, below the lock at 100.
func enumerationBench(attempts n: Int, in dir: URL) async throws {
    let clock = Mutex(Date(timeIntervalSince1970: 1_795_000_000))
    var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["bench"]))
    configuration.abuse.sourcePINFailures = .max
    configuration.abuse.signUps = .max
    configuration.abuse.alarmFailures = .max
    let service = IdentityService(
        store: SQLiteStore(try AppDatabase(path: dir.appendingPathComponent("enumeration.sqlite").path)), configuration: configuration,
        jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")), now: { clock.withLock { $0 } })
    let users = 20
    for i in 0..<users { _ = try await service.register(username: "known_\(i)", pin: "739154", source: .inProcess) }
    let legacyHash = SHA256.hash(data: Data("couple_pin_salt_v1_739154".utf8)).map { String(format: "%02x", $0) }.joined()
    for i in 0..<users {
        let anon = try await service.signInAnonymously(source: .inProcess)
        try await service.setUsername(accessToken: anon.accessToken, username: "legacy_\(i)")
        try await service.importLegacyPINHash(userId: anon.userId, hexHash: legacyHash)
    }
    var known: [Double] = [], unknown: [Double] = [], legacy: [Double] = []
    func attempt(_ username: String) async -> Double {
        clock.withLock { $0 = $0.addingTimeInterval(2 * 86400) }
        let start = ContinuousClock.now
        do {
            _ = try await service.signIn(username: username, pin: "258013", source: .inProcess)
            fatalError("a wrong PIN signed in")
        } catch let error as IdentityError {
            precondition(error.code == .invalidCredentials, "\(error)")
        } catch {
            fatalError("\(error)")
        }
        return milliseconds(ContinuousClock.now - start)
    }
    for i in 0..<n {
        known.append(await attempt("known_\(i % users)"))
        unknown.append(await attempt("ghost_\(i)"))
        if i % 5 == 0 { legacy.append(await attempt("legacy_\(i / 5 % users)")) }
    }
    func line(_ label: String, _ s: [Double]) {
        print(label.padding(toLength: 40, withPad: " ", startingAt: 0)
            + String(format: " median %8.3f ms  p10 %8.3f  p90 %8.3f  (n=%d)", median(s), percentile(s, 0.1), percentile(s, 0.9), s.count))
    }
    print("wrong-PIN sign-in answer time, PBKDF2 rounds \(configuration.pin.rounds):")
    line("known username (PBKDF2 hash)", known)
    line("unknown username", unknown)
    line("known username (legacy SHA-256 hash)", legacy)
    print(String(format: "median difference known - unknown: %+.3f ms (%+.2f%%)", median(known) - median(unknown), (median(known) - median(unknown)) / median(unknown) * 100))
    print(String(format: "median difference legacy - unknown: %+.3f ms (%+.2f%%)", median(legacy) - median(unknown), (median(legacy) - median(unknown)) / median(unknown) * 100))
}

let dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: dir) }
if let flag = CommandLine.arguments.firstIndex(of: "--enumeration") {
    let n = CommandLine.arguments.count > flag + 1 ? Int(CommandLine.arguments[flag + 1]) ?? 1000 : 1000
    try await enumerationBench(attempts: n, in: dir)
    exit(0)
}
let databaseValue = CommandLine.arguments.firstIndex(of: "--database").map { CommandLine.arguments[$0 + 1] }
let opened = try OpenedIdentityStore.open(databaseValue ?? dir.appendingPathComponent("bench.sqlite").path, field: "--database")
if let pool = opened.service {
    Task { try await pool.run() }
    try await opened.prepare()
}
var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["bench"]))
configuration.abuse.signUps = .max
let service = IdentityService(
    store: opened.store, configuration: configuration,
    jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))

print("PBKDF2-SHA256 rounds: \(configuration.pin.rounds); store: \(opened.description)")
await measure("KDF only (one PIN check, PBKDF2)", runs: 15) {
    _ = try! KDF.Insecure.PBKDF2.deriveKey(from: Array("1234".utf8), salt: Array(repeating: 7, count: 16), using: .sha256, outputByteCount: 32, rounds: configuration.pin.rounds)
}
try await measure("sign-in anonymous", runs: 200) { _ = try await service.signInAnonymously(source: .inProcess) }
_ = try await service.register(username: "bench_user", pin: "482913", source: .inProcess)
try await measure("sign-in username + PIN", runs: 15) { _ = try await service.signIn(username: "bench_user", pin: "482913", source: .inProcess) }
let tokens = try await service.signInAnonymously(source: .inProcess)
try await measure("session-token validation (read path)", runs: 2000) { _ = try await service.validate(accessToken: tokens.accessToken) }
try await measure("session token -> Subject", runs: 2000) { _ = try await service.subject(accessToken: tokens.accessToken) }
var current = tokens.refreshToken
try await measure("refresh (rotation)", runs: 200) {
    current = try await service.refresh(refreshToken: current).refreshToken
}

// Decide by token through the facade, on the shipped research-crawler set, for a stored project.
let positional = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("--") && $0 != databaseValue }
let policyDir = positional.first ?? "policies/research-crawler"
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
