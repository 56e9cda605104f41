// A plain timing runner that needs no benchmark plugin: `swift run -c release gatehouse-bench [options]`.
//
// Times with ContinuousClock. A sample is one pass over a fixed request mix; the figure per decision is the
// pass's time over its request count, so clock overhead is amortised. Reports median and p99 of the samples,
// throughput, and heap allocations per decision (counted by ordo-one's malloc interposer, linked in).
// Sections: the shipped sets (decide, allow-only, deny-only, prepared, explain, compile), `policy check` end to
// end, the facade's decide-by-session-token, and the scaling table over synthetic sets (decide, compile, memory);
// `--section lists`: every page of a list through the facade against a plain SELECT (Lists.swift).
import BenchFixtures
import Foundation
import Gatehouse
import HandWrittenBaseline
import MallocInterposerSwift
import PolicySynth

let usage = """
    usage: gatehouse-bench [--section shipped|check|facade|scaling|lists|all] [--max-rules N] [--samples N] [--list-rounds N]
           gatehouse-bench --profile-lists ROUNDS
           gatehouse-bench --compile-only N
           gatehouse-bench --profile decide|allow|deny|prepared|explain|plan|handwritten|interned|handwritten-interned SET PASSES
           gatehouse-bench --profile scaling N PASSES
           gatehouse-bench --decide-file POLICY_DIR REQUESTS_JSONL
           gatehouse-bench --edge-lines POLICY_DIR REQUESTS_JSONL
    """

var maxRules = 100_000
var samples = 2_000
var sections: Set<String> = ["shipped", "check", "facade", "scaling", "lists"]
var listRounds = 31
var profileListRounds: Int?
var compileOnly: Int?
var profile: [String]?
var decideFile: (String, String)?
var edgeLines: (String, String)?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--max-rules": maxRules = Int(arguments.popFirst() ?? "") ?? maxRules
    case "--samples": samples = Int(arguments.popFirst() ?? "") ?? samples
    // Interleaved rounds of the lists section (each round: the plain SELECT, every page at 1000, every page at 100).
    case "--list-rounds": listRounds = max(1, Int(arguments.popFirst() ?? "") ?? listRounds)
    // Each listing ROUNDS times between callgrind marks: the target of scripts/callgrind-lists.py.
    case "--profile-lists": profileListRounds = Int(arguments.popFirst() ?? "")
    case "--section":
        let name = arguments.popFirst() ?? ""
        sections = name == "all" ? sections : [name]
    // Compiles one synthetic set of N rules and exits: the target to run under callgrind.
    case "--compile-only": compileOnly = Int(arguments.popFirst() ?? "")
    // Runs PASSES passes over one mix and exits, printing nothing timed: the target to run under callgrind.
    // Instructions per decision = (Ir at PASSES - Ir at 0) / (PASSES x mix size).
    case "--profile": profile = [arguments.popFirst() ?? "", arguments.popFirst() ?? "", arguments.popFirst() ?? ""]
    // Times decide in process over a policy folder and a JSON Lines request file (the engine comparison uses it).
    case "--decide-file": decideFile = (arguments.popFirst() ?? "", arguments.popFirst() ?? "")
    // Answers a JSON Lines file as `policy decide --jsonl` does (PolicyEdge's DecisionStream loop: one reused request,
    // read, decide, write into one buffer), to /dev/null: the edge per line under callgrind without the CLI.
    case "--edge-lines": edgeLines = (arguments.popFirst() ?? "", arguments.popFirst() ?? "")
    default:
        print(usage)
        exit(64)
    }
}

@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

func nanoseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e9 + Double(d.components.attoseconds) / 1e9
}

func fmt(_ x: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", x) }

struct Stats {
    var median: Double
    var p99: Double
    var perSecond: Double
    var mallocs: Double
}

/// Runs `body` over `items` `samples` times (after a warm-up) and returns per-item median and p99 in ns,
/// throughput, and mallocs per item (from one extra counted pass).
func measure<Item>(_ items: [Item], samples: Int, _ body: (Item) -> some Any) -> Stats {
    guard !items.isEmpty else { return Stats(median: .nan, p99: .nan, perSecond: .nan, mallocs: .nan) }
    let clock = ContinuousClock()
    // Items are passed by index out of a buffer: a `for item in items` loop would copy each request out of the
    // array (a retain and release of each of its strings and collections), which is the caller's cost, not decide's.
    func pass(_ buffer: UnsafeBufferPointer<Item>) { for i in buffer.indices { consume(body(buffer[i])) } }
    for _ in 0..<max(10, samples / 10) { items.withUnsafeBufferPointer(pass) }
    var perItem: [Double] = []
    perItem.reserveCapacity(samples)
    var total = Duration.zero
    for _ in 0..<samples {
        let start = clock.now
        items.withUnsafeBufferPointer(pass)
        let elapsed = clock.now - start
        total += elapsed
        perItem.append(nanoseconds(elapsed) / Double(items.count))
    }
    perItem.sort()
    let p99 = perItem[min(perItem.count - 1, Int(Double(perItem.count) * 0.99))]
    return Stats(
        median: perItem[perItem.count / 2], p99: p99,
        perSecond: Double(samples * items.count) / (nanoseconds(total) / 1e9), mallocs: mallocsPerItem(items, body))
}

/// Heap allocations per item over one pass (the pass is warm, so one-time caches are not counted).
func mallocsPerItem<Item>(_ items: [Item], _ body: (Item) -> some Any) -> Double {
    func pass(_ buffer: UnsafeBufferPointer<Item>) { for i in buffer.indices { consume(body(buffer[i])) } }
    items.withUnsafeBufferPointer(pass)
    MallocInterposerSwift.initialize()
    MallocInterposerSwift.hook()
    items.withUnsafeBufferPointer(pass)
    MallocInterposerSwift.unhook()
    return Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(items.count)
}

/// Median wall time in ms of `runs` calls of `body`.
func medianMilliseconds(runs: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var times: [Double] = []
    for _ in 0..<runs {
        let start = clock.now
        body()
        times.append(nanoseconds(clock.now - start) / 1e6)
    }
    times.sort()
    return times[times.count / 2]
}

/// Compiles `set` and returns the policy and the heap bytes it keeps (allocated minus freed while compiling,
/// with everything but the compiled policy dropped).
func compiledWithFootprint(_ set: SyntheticPolicySet) -> (CompiledPolicy, Int) {
    MallocInterposerSwift.initialize()
    MallocInterposerSwift.hook()
    let policy = Fixtures.compiled(set)
    MallocInterposerSwift.unhook()
    let stats = MallocInterposerSwift.getStatistics()
    return (policy, stats.mallocBytesCount - stats.freeBytesCount)
}

func bytes(_ n: Int) -> String {
    n >= 1 << 20 ? "\(fmt(Double(n) / Double(1 << 20), 1)) MiB" : "\(fmt(Double(n) / 1024, 0)) KiB"
}

// MARK: Profile targets (no timing)

if let n = compileOnly {
    let set = SyntheticPolicySet(ruleCount: n)
    let ms = medianMilliseconds(runs: 1) { consume(Fixtures.compiled(set)) }
    print("compiled \(n) rules in \(fmt(ms, 1)) ms")
    exit(0)
}

if let rounds = profileListRounds {
    try await profileLists(rounds: rounds)
    exit(0)
}

if let profile {
    let passes = Int(profile[2]) ?? 0
    if profile[0] == "scaling" {
        let set = SyntheticPolicySet(ruleCount: Int(profile[1]) ?? 10)
        let policy = Fixtures.compiled(set)
        let requests = set.requests()
        for _ in 0..<passes { for r in requests { consume(policy.decide(r)) } }
        print("\(passes) passes over \(requests.count) requests")
        exit(0)
    }
    let policy = Fixtures.compiled(profile[1])
    var requests = Fixtures.requests(for: profile[1])
    switch profile[0] {
    case "allow": requests = requests.filter { policy.decide($0).isAllowed }
    case "deny": requests = requests.filter { !policy.decide($0).isAllowed }
    default: break
    }
    switch profile[0] {
    case "explain": for _ in 0..<passes { for r in requests { consume(policy.explain(r)) } }
    case "plan":
        // The plan each request's subject, action and type would ask for a list screen: one `plan` per request, so
        // instructions per call sit next to `decide`'s on the same mix (callgrind collects only inside `plan`).
        for _ in 0..<passes { for r in requests { consume(policy.plan(subject: r.subject, action: r.action, resourceType: r.resource.type, context: r.context)) } }
    case "handwritten":
        // Called directly, not through `HandWritten.check(for:)`'s closure, so the symbol callgrind collects is the one run.
        switch profile[1] {
        case "research-crawler": for _ in 0..<passes { for r in requests { consume(HandWritten.researchCrawler(r)) } }
        case "mimisupply": for _ in 0..<passes { for r in requests { consume(HandWritten.mimisupply(r)) } }
        default: fatalError("no hand-written rules for \(profile[1])")
        }
    case "interned":
        let vocabulary = policy.vocabulary
        let interned = requests.map { vocabulary.intern($0) }
        for _ in 0..<passes { for r in interned { consume(policy.decide(r)) } }
    case "handwritten-interned":
        let interned = requests.map(HandInternedRequest.init)
        for _ in 0..<passes { for r in interned { consume(HandWritten.decide(r)) } }
    case "prepared":
        let prepared = requests.map { policy.prepare(resourceType: $0.resource.type, action: $0.action) }
        for _ in 0..<passes {
            for (r, p) in zip(requests, prepared) { consume(p.map { policy.decide(r, prepared: $0) } ?? policy.decide(r)) }
        }
    default: for _ in 0..<passes { for r in requests { consume(policy.decide(r)) } }
    }
    print("\(passes) passes over \(requests.count) requests")
    exit(0)
}

/// One block of lines answered as `DecisionStream.answer` does (its loop, copied: PolicyEdge is not a product).
@inline(never)
func answerEdgeLines(_ input: UnsafeRawBufferPointer, policy: CompiledPolicy, reader: RequestReader, request: inout Request, into output: inout [UInt8]) {
    guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
    var start = 0
    var line = 0
    while start < input.count {
        guard let found = memchr(base + start, 0x0A, input.count - start) else { break }
        let newline = start + (UnsafeRawPointer(found) - UnsafeRawPointer(base + start))
        line += 1
        do {
            try reader.read(UnsafeRawBufferPointer(start: base + start, count: newline - start), into: &request)
            writeEdgeDecision(policy.decide(request), to: &output)
        } catch {
            DecisionWriter.appendErrorItem(error, line: line, to: &output)
        }
        output.append(UInt8(ascii: "\n"))
        start = newline + 1
    }
}

@inline(never)
func writeEdgeDecision(_ decision: Decision, to output: inout [UInt8]) { DecisionWriter.append(decision, to: &output) }

if let (directory, path) = edgeLines {
    guard let policy = PolicyCompiler.load(directory: directory).policy else { fatalError("\(directory) does not load") }
    let bytes = Array(FileManager.default.contents(atPath: path) ?? Data())
    var request = Request(action: "", resource: Resource(type: ""))
    var output: [UInt8] = []
    output.reserveCapacity(bytes.count * 2)
    bytes.withUnsafeBytes { answerEdgeLines($0, policy: policy, reader: RequestReader(), request: &request, into: &output) }
    FileHandle.standardOutput.write(Data(output))
    exit(0)
}

if let (directory, path) = decideFile {
    guard let policy = PolicyCompiler.load(directory: directory).policy else { fatalError("\(directory) does not load") }
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    let requests = try text.split(separator: "\n").map { try Request(json: $0) }
    let allowed = requests.filter { policy.decide($0).isAllowed }.count
    let stats = measure(requests, samples: samples) { policy.decide($0) }
    print("decide-file: \(requests.count) requests, \(allowed) allowed, median \(fmt(stats.median)) ns, p99 \(fmt(stats.p99)) ns")
    exit(0)
}

print("Gatehouse benchmarks (ContinuousClock runner): \(ProcessInfo.processInfo.activeProcessorCount) cores, \(samples) samples per row")

// MARK: Shipped sets

if sections.contains("shipped") {
    print("")
    print("Shipped sets. decide/explain: ns per decision; mallocs: heap allocations per decision.")
    print("")
    print("| set | mix | requests allow/deny | median ns | p99 ns | decides/s | mallocs | compile ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for set in Fixtures.shippedSetNames {
        let policy = Fixtures.compiled(set)
        let requests = Fixtures.requests(for: set)
        let allows = requests.filter { policy.decide($0).isAllowed }
        let denies = requests.filter { !policy.decide($0).isAllowed }
        let files = Fixtures.files(of: set)
        let compile = medianMilliseconds(runs: 20) { consume(PolicyCompiler.compile(name: set, files: files)) }
        // The prepared row times the requests whose pair the policy knows, each with its handle, by index.
        let known = requests.filter { policy.prepare(resourceType: $0.resource.type, action: $0.action) != nil }
        let handles = known.map { policy.prepare(resourceType: $0.resource.type, action: $0.action)! }
        let rows: [(String, Stats)] = [
            ("decide mix", measure(requests, samples: samples) { policy.decide($0) }),
            ("decide allow-only", measure(allows, samples: samples) { policy.decide($0) }),
            ("decide deny-only", measure(denies, samples: samples) { policy.decide($0) }),
            ("decide known pairs", measure(Array(known.indices), samples: samples) { policy.decide(known[$0]) }),
            ("decide known pairs, prepared", measure(Array(known.indices), samples: samples) { policy.decide(known[$0], prepared: handles[$0]) }),
            ("explain mix", measure(requests, samples: max(100, samples / 4)) { policy.explain($0) }),
        ]
        for (i, (name, s)) in rows.enumerated() {
            print("| \(set) | \(name) | \(allows.count)/\(denies.count) | \(fmt(s.median)) | \(fmt(s.p99)) | \(fmt(s.perSecond / 1e6, 2))M | \(fmt(s.mallocs, 2)) | \(i == 0 ? fmt(compile, 2) : "") |")
        }
        // The yardsticks, same mix, same process: the rules written by hand over the same structs, and over integers.
        if let check = HandWritten.check(for: set) {
            let vocabulary = policy.vocabulary
            let interned = requests.map { vocabulary.intern($0) }
            let handInterned = requests.map(HandInternedRequest.init)
            let hand = measure(requests, samples: samples) { check($0) }
            let internedDecide = measure(interned, samples: samples) { policy.decide($0) }
            let handIntegers = measure(handInterned, samples: samples) { HandWritten.decide($0) }
            let decide = rows[0].1
            for (name, s, ratio) in [
                ("hand-written", hand, ""), ("decide / hand-written", decide, "\(fmt(decide.median / hand.median, 2))x"),
                ("decide interned", internedDecide, ""), ("hand-written over integers", handIntegers, ""),
                ("interned / hand-written over integers", internedDecide, "\(fmt(internedDecide.median / handIntegers.median, 2))x"),
            ] {
                print("| \(set) | \(name) \(ratio) | \(allows.count)/\(denies.count) | \(fmt(s.median)) | \(fmt(s.p99)) | \(fmt(s.perSecond / 1e6, 2))M | \(fmt(s.mallocs, 2)) | |")
            }
        }
    }
}

// MARK: policy check, end to end

/// The release `policy` binary: `GATEHOUSE_POLICY_BIN`, else the main package's or this package's release build.
func policyBinary() -> String? {
    if let path = ProcessInfo.processInfo.environment["GATEHOUSE_POLICY_BIN"] { return path }
    let root = URL(fileURLWithPath: Fixtures.policiesDirectory).deletingLastPathComponent().path
    return [root + "/.build/release/policy", root + "/Benchmarks/.build/release/policy"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}

if sections.contains("check") {
    print("")
    print("`policy check` end to end (process start included), 20 runs each.")
    print("")
    if let binary = policyBinary() {
        print("| command | median ms | max ms | exit |")
        print("| --- | ---: | ---: | ---: |")
        let targets = Fixtures.shippedSetNames.map { Fixtures.policiesDirectory + "/" + $0 } + [Fixtures.policiesDirectory]
        for target in targets {
            var status: Int32 = 0
            var times: [Double] = []
            for _ in 0..<21 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: binary)
                process.arguments = ["check", target]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                let start = ContinuousClock.now
                try process.run()
                process.waitUntilExit()
                times.append(nanoseconds(ContinuousClock.now - start) / 1e6)
                status = process.terminationStatus
            }
            times = Array(times.dropFirst()).sorted()  // the first run warms the page cache
            let shown = target.replacingOccurrences(of: Fixtures.policiesDirectory, with: "policies")
            print("| policy check \(shown) | \(fmt(times[times.count / 2], 1)) | \(fmt(times.last!, 1)) | \(status) |")
        }
    } else {
        print("no release `policy` binary: run `swift build -c release --product policy` here or at the repository root")
    }
}

// MARK: The facade: decide by session token

if sections.contains("facade") {
    print("")
    print("GatehouseService.decide(token:) on research-crawler, SQLite store in a temporary folder (async; store reads included).")
    print("")
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["bench"]))
    configuration.pin = .unsafeForTesting(rounds: 1_000)  // registration only; not what is timed
    let identity = IdentityService(
        store: SQLiteStore(try AppDatabase(path: dir.appendingPathComponent("bench.sqlite").path)), configuration: configuration,
        jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))
    let gate = GatehouseService(policy: Fixtures.compiled("research-crawler"), identity: identity)
    let member = try await identity.register(username: "bench_member", pin: "4826", source: .inProcess)
    let project = try await identity.createSpace(accessToken: member.accessToken, name: "Bench", type: "project", inviteRole: "editor")
    let cases: [(String, String?, String, Resource)] = [
        ("token, stored project, view (allow)", member.accessToken, "view", Resource(type: "project", id: project.resourceId)),
        ("token, app feature gate (deny, free)", member.accessToken, "ai_suggestions", Resource(type: "app")),
        ("no token, app (signed out)", nil, "cloud_sync", Resource(type: "app")),
        ("dead token (unauthenticated)", "garbage", "view", Resource(type: "project", id: project.resourceId)),
    ]
    print("| call | median µs | p99 µs | calls/s |")
    print("| --- | ---: | ---: | ---: |")
    for (name, token, action, resource) in cases {
        let clock = ContinuousClock()
        let batch = 20
        for _ in 0..<100 { _ = try await gate.decide(token: token, action: action, resource: resource) }
        var perCall: [Double] = []
        var total = Duration.zero
        for _ in 0..<max(50, samples / 10) {
            let start = clock.now
            for _ in 0..<batch { _ = try await gate.decide(token: token, action: action, resource: resource) }
            let elapsed = clock.now - start
            total += elapsed
            perCall.append(nanoseconds(elapsed) / Double(batch) / 1000)
        }
        perCall.sort()
        let p99 = perCall[min(perCall.count - 1, Int(Double(perCall.count) * 0.99))]
        let rate = Double(perCall.count * batch) / (nanoseconds(total) / 1e9)
        print("| \(name) | \(fmt(perCall[perCall.count / 2], 1)) | \(fmt(p99, 1)) | \(fmt(rate)) |")
    }
}

// MARK: Scaling

if sections.contains("scaling") {
    print("")
    print("Scaling over synthetic sets (256-request mix). memory: heap bytes the compiled policy keeps.")
    print("")
    print("| rules | resource types | source bytes | compile ms | memory | decide median ns | decide p99 ns | decides/s | mallocs | vs 10 rules |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    var baseline: Double?
    for n in [10, 1_000, 10_000, 100_000] where n <= maxRules {
        let set = SyntheticPolicySet(ruleCount: n)
        let (policy, footprint) = compiledWithFootprint(set)
        let runs = n >= 100_000 ? 3 : (n >= 10_000 ? 5 : 10)
        let compile = medianMilliseconds(runs: runs) { consume(Fixtures.compiled(set)) }
        let requests = set.requests()
        let decide = measure(requests, samples: max(50, samples / 4)) { policy.decide($0) }
        baseline = baseline ?? decide.median
        print("| \(n) | \(set.typeCount) | \(set.byteCount) | \(fmt(compile, 1)) | \(bytes(footprint)) | \(fmt(decide.median)) | \(fmt(decide.p99)) | \(fmt(decide.perSecond / 1e6, 2))M | \(fmt(decide.mallocs, 2)) | \(fmt(decide.median / baseline!, 2))x |")
    }
}

// MARK: Lists

if sections.contains("lists") {
    try await runListSection(rounds: listRounds)
}
