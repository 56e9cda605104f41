import Foundation
import Testing
import GatehouseTestSupport

/// nginx, in front of two replicas, from the template in `examples/deploy/nginx.conf`
/// (`docs/deploy.md`), started as a child on a free loopback port with its pid, logs and temporary
/// files in a temporary folder.
struct Nginx {
    static let path: String? = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let curlPath: String? = ["/usr/bin/curl", "/usr/local/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isAvailable: Bool { path != nil && curlPath != nil }
    /// Skipped without nginx, except in CI (`CI=true`), where `start` fails with `skipReason` instead.
    static var shouldRun: Bool { isAvailable || ProcessInfo.processInfo.environment["CI"] == "true" }
    static let skipReason = "nginx (or curl) is not installed: apt-get install nginx curl (.ci/run installs them)"

    static let template = TestServer.root.appendingPathComponent("examples/deploy/nginx.conf")

    let prefix: URL
    let process: RunningProgram
    let base: URL

    /// The template with its placeholders filled.
    static func render(prefix: URL, listen: String, upstreams: [URL]) throws -> String {
        let servers = upstreams.map { "server \($0.host!):\($0.port!) max_fails=2 fail_timeout=5s;" }.joined(separator: "\n        ")
        let text = try String(contentsOf: template, encoding: .utf8)
            .replacingOccurrences(of: "@PREFIX@", with: prefix.path)
            .replacingOccurrences(of: "@LISTEN@", with: listen)
            .replacingOccurrences(of: "@UPSTREAMS@", with: servers)
        for placeholder in ["@PREFIX@", "@LISTEN@", "@UPSTREAMS@"] where text.contains(placeholder) {
            throw HarnessError("\(placeholder) was left in the rendered config")
        }
        return text
    }

    /// Renders the config for `upstreams`, starts nginx on a free port and waits (bounded) until it answers.
    static func start(in dir: URL, upstreams: [URL]) async throws -> Nginx {
        guard let path, curlPath != nil else { throw HarnessError(skipReason) }
        let prefix = dir.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true)
        var lastError = ""
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let conf = prefix.appendingPathComponent("nginx.conf")
            try render(prefix: prefix, listen: "127.0.0.1:\(port)", upstreams: upstreams).write(to: conf, atomically: true, encoding: .utf8)
            let process = try await Program(path: path, ["-c", conf.path, "-p", prefix.path, "-e", prefix.appendingPathComponent("error.log").path])
                .start()
            let base = URL(string: "http://127.0.0.1:\(port)")!
            for _ in 0..<100 where process.isRunning {
                if let answer = try? await Client.call("GET", base, "/healthz"), answer.status == 200 {
                    return Nginx(prefix: prefix, process: process, base: base)
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            lastError = (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            process.signal(SIGTERM)
            await process.wait(within: .seconds(60))
        }
        throw HarnessError("nginx did not start: \(lastError.suffix(1500))")
    }

    /// SIGQUIT (graceful), then SIGKILL after a bounded wait.
    func stop() async {
        await process.stop(SIGQUIT, grace: .seconds(5))
    }

    /// The `upstream=` of every access-log line for `path`, in order.
    func upstreams(for path: String) throws -> [String] {
        let log = try String(contentsOf: prefix.appendingPathComponent("access.log"), encoding: .utf8)
        return log.split(separator: "\n").filter { $0.contains(" \(path) ") }.compactMap { line in
            line.firstMatch(of: /upstream=(\S+)/).map { String($0.1) }
        }
    }

    /// One request through nginx by curl from a chosen loopback source address (URLSession cannot
    /// choose one), so the replicas see distinct clients in X-Forwarded-For.
    func curl(_ method: String, _ path: String, from source: String, forwardedFor: String? = nil) async throws -> Int {
        let text = try await Program(
            path: Nginx.curlPath!,
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--interface", source, "-X", method, base.absoluteString + path]
                + (forwardedFor.map { ["-H", "X-Forwarded-For: \($0)"] } ?? [])
        ).run().standardOutput
        return Int(text) ?? 0
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released; the caller retries if another process takes it).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw HarnessError("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw HarnessError("getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

@Suite(.serialized, .startsServers) struct LoadBalancerTests {
    /// Requests through nginx reach both replicas; a session made through nginx works through nginx
    /// whichever replica answers, and on each replica directly; sign-out through nginx ends it.
    @Test(.enabled(if: Nginx.shouldRun, Comment(rawValue: Nginx.skipReason)), arguments: await SharedStore.runnable)
    func nginxSpreadsRequestsOverBothReplicasAndSessionsWorkThroughIt(store: SharedStore) async throws {
        try await Replicas.with(store: store, arguments: ["--trusted-proxy", "127.0.0.1"]) { r in
            let nginx = try await Nginx.start(in: r.dir, upstreams: r.bases)
            do {
                let replicaAddresses = Set(r.bases.map { "\($0.host!):\($0.port!)" })
                let decide = #"{"action": "create_space", "resource": {"type": "onboarding"}}"#
                var hashes: Set<String> = []
                for _ in 0..<20 {
                    let answer = try await Client.call("POST", nginx.base, "/v1/decide", body: decide)
                    #expect(answer.status == 200)
                    if let hash = answer.header("Gatehouse-Policy") { hashes.insert(hash) }
                }
                #expect(hashes.count == 1, "both replicas serve one policy version: \(hashes)")
                let policy = try await Client.call("GET", nginx.base, "/v1/policy")
                #expect(((policy.object["active"] as? [String: Any])?["hash"] as? String).map { hashes.contains($0) } == true)
                let decideUpstreams = try nginx.upstreams(for: "/v1/decide")
                #expect(decideUpstreams.count == 20)
                #expect(Set(decideUpstreams) == replicaAddresses, "answered by \(Set(decideUpstreams)), replicas \(replicaAddresses)")

                let session = try await Client.call("POST", nginx.base, "/v1/auth/anonymous")
                #expect(session.status == 201, "\(session.text)")
                let token = try #require(session.string("accessToken"))
                for _ in 0..<10 {
                    let me = try await Client.call("GET", nginx.base, "/v1/me", bearer: token)
                    #expect(me.status == 200 && me.string("userId") == session.string("userId"), "\(me.status) \(me.text)")
                }
                #expect(Set(try nginx.upstreams(for: "/v1/me")) == replicaAddresses)
                for base in r.bases { #expect(try await Client.call("GET", base, "/v1/me", bearer: token).status == 200) }

                #expect(try await Client.call("POST", nginx.base, "/v1/auth/signout", bearer: token).status == 204)
                for _ in 0..<4 { #expect(try await Client.call("GET", nginx.base, "/v1/me", bearer: token).status == 401) }
            } catch {
                await nginx.stop()
                throw error
            }
            await nginx.stop()
        }
    }

    /// Behind nginx each client keeps its own sign-in limit: the replicas trust nginx's
    /// X-Forwarded-For. One client spends its allowance (2 per minute here, shared by the two replicas
    /// through the store, so 2 in all); another client's sign-in still goes through. Without `--trusted-proxy` both would be
    /// nginx's 127.0.0.1 and the second client would be refused too.
    @Test(.enabled(if: Nginx.shouldRun, Comment(rawValue: Nginx.skipReason)))
    func behindNginxEachClientHasItsOwnSignInLimit() async throws {
        try await Replicas.with(store: .sqlite, arguments: ["--trusted-proxy", "127.0.0.1", "--sign-in-limit", "2/60"]) { r in
            let nginx = try await Nginx.start(in: r.dir, upstreams: r.bases)
            do {
                var first: [Int] = []
                for _ in 0..<6 { first.append(try await nginx.curl("POST", "/v1/auth/anonymous", from: "127.0.0.2")) }
                #expect(first.filter { $0 == 201 }.count == 2, "\(first)")
                #expect(first.filter { $0 == 429 }.count == 4, "\(first)")
                #expect(try await nginx.curl("POST", "/v1/auth/anonymous", from: "127.0.0.3") == 201)
                // A client naming another address itself gains nothing: nginx appends the one it saw.
                #expect(try await nginx.curl("POST", "/v1/auth/anonymous", from: "127.0.0.2", forwardedFor: "127.0.0.9") == 429)
            } catch {
                await nginx.stop()
                throw error
            }
            await nginx.stop()
        }
    }
}
