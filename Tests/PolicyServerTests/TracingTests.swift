import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GatehouseTestSupport
import Testing

/// OpenTelemetry traces end to end (issue 39): `policy serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports to a real
/// OTLP/HTTP receiver (Tests/Tracing/otlp_receiver.py, decoding the protobuf with `opentelemetry-proto` from `.venv`),
/// and the test checks the span tree, names and attributes, a caller's `traceparent` continued, the trace id in a
/// problem and in a log line of the request, and that no span or log line carries a token, PIN, share code or user id.
@Suite(.startsServers) struct TracingTests {
    static let modules = ["opentelemetry.proto.collector.trace.v1.trace_service_pb2"]

    /// A span as the receiver printed it.
    struct ExportedSpan: Decodable {
        var name: String
        var kind: Int
        var traceId: String
        var spanId: String
        var parentSpanId: String
        var service: String?
        var attributes: [String: AttributeValue]

        func string(_ key: String) -> String? { if case .string(let s)? = attributes[key] { s } else { nil } }
        func int(_ key: String) -> Int? { if case .int(let i)? = attributes[key] { i } else { nil } }
    }

    enum AttributeValue: Decodable, Equatable {
        case string(String), int(Int), double(Double), bool(Bool), other

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let v = try? c.decode(Bool.self) { self = .bool(v) }
            else if let v = try? c.decode(Int.self) { self = .int(v) }
            else if let v = try? c.decode(Double.self) { self = .double(v) }
            else if let v = try? c.decode(String.self) { self = .string(v) }
            else { self = .other }
        }
    }

    struct Answer {
        var status: Int
        var headers: [String: String]
        var text: String
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
        func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    }

    static func send(_ method: String, _ url: URL, _ body: String?, headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: url, timeoutInterval: 120)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Answer(status: http.statusCode, headers: (http.allHeaderFields as? [String: String]) ?? [:], text: String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled("needs python with opentelemetry-proto: run .ci/run") { await ExternalTool.shouldRun(root: TestServer.root, importing: modules) })
    func signInAndABearerDecisionExportTheirSpansWithoutSecrets() async throws {
        let python = try #require(
            await ExternalTool.interpreter(root: TestServer.root, importing: Self.modules), "needs python with opentelemetry-proto (.ci/run installs it in .venv)")
        let receiver = try await Program(path: python, [TestServer.root.appendingPathComponent("Tests/Tracing/otlp_receiver.py").path]).start()
        defer { receiver.kill() }
        let first = try await receiver.nextLine(within: .seconds(60))
        let receiverPort = try #require(first.wholeMatch(of: /listening on (\d+)/)?.1, "receiver said: \(first)")

        let t = try TestServer()  // a policy copy and a folder
        let log = t.dir.appendingPathComponent("serve.log")
        let environment = ServedProcess.environment.merging([
            "GATEHOUSE_DATABASE": t.dir.appendingPathComponent("traced.sqlite").path, "GATEHOUSE_DECISION_LOG": "all",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiverPort)", "OTEL_SERVICE_NAME": "gatehouse-tracing-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        ]) { _, given in given }
        let server = try await Program(
            ServedProcess.binary, ["serve", "--host", "127.0.0.1", "--port", "0", "--policies", t.policies.path], environment: .only(environment)
        ).start(errorLog: log)
        defer { server.kill() }
        let line = try await server.nextLine(within: .seconds(60))
        let base = try #require(URL(string: String(line.dropFirst("listening on ".count))), "first line: \(line)")

        // A PIN account (the credential to keep out of spans), a space and its share code, a second account joining by it.
        let pin = "\(Int.random(in: 100_000...999_999))"
        let register = try await Self.send("POST", base.appendingPathComponent("v1/auth/pin/register"), #"{"username": "tracer", "pin": "\#(pin)"}"#)
        #expect(register.status == 201, "\(register.text)")
        let access = try #require(register.object["accessToken"] as? String)
        let refresh = try #require(register.object["refreshToken"] as? String)
        let userId = try #require(register.object["userId"] as? String)
        let space = try await Self.send(
            "POST", base.appendingPathComponent("v1/spaces"), #"{"name": "Traced"}"#, headers: ["Authorization": "Bearer \(access)"])
        #expect(space.status == 201, "\(space.text)")
        let shareCode = try #require(space.object["shareCode"] as? String)
        let anonymous = try await Self.send("POST", base.appendingPathComponent("v1/auth/anonymous"), nil)
        let other = try #require(anonymous.object["accessToken"] as? String)
        let otherUser = try #require(anonymous.object["userId"] as? String)
        let join = try await Self.send(
            "POST", base.appendingPathComponent("v1/spaces/join"), #"{"shareCode": "\#(shareCode)"}"#, headers: ["Authorization": "Bearer \(other)"])
        #expect(join.status == 200, "\(join.text)")

        // The bearer decision, continuing the caller's trace.
        let traceId = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let parentSpan = "00f067aa0ba902b7"
        let decision = try await Self.send(
            "POST", base.appendingPathComponent("v1/decide"), #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#,
            headers: ["Authorization": "Bearer \(access)", "traceparent": "00-\(traceId)-\(parentSpan)-01", "tracestate": "vendor=1"])
        #expect(decision.status == 200, "\(decision.text)")
        let policyHash = try #require(decision.header("Gatehouse-Policy"))

        // A problem names the request's trace (the caller's here).
        let problemTrace = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let problem = try await Self.send(
            "POST", base.appendingPathComponent("v1/decide"), "{not json", headers: ["traceparent": "00-\(problemTrace)-\(parentSpan)-01"])
        #expect(problem.status == 400)
        #expect(problem.object["traceId"] as? String == problemTrace, "\(problem.text)")

        // A request that logs (a malformed chunked body): its log line carries the trace id.
        let logTrace = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let port = try #require(base.port)
        let malformed = try await onThread { () throws -> RawConnection.Answer? in
            let connection = try RawConnection(port: port)
            try connection.send(
                "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\ntraceparent: 00-\(logTrace)-\(parentSpan)-01\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
            return try connection.answer(within: 60)
        }
        #expect(malformed?.status == 400)
        #expect((malformed?.object["traceId"] as? String) == logTrace)

        // SIGTERM: the exporter stops last and sends what is queued.
        let ended = await server.stop()
        #expect(ended?.status == 0)

        // The spans, until the decision's tree is in (bounded: the receiver gets them within the schedule delay).
        var spans: [ExportedSpan] = []
        var raw: [String] = []
        func has(_ name: String, trace: String) -> Bool { spans.contains { $0.name == name && $0.traceId == trace } }
        while !(has(DecisionSpan.decide, trace: traceId) && has("POST /v1/decide", trace: traceId) && spans.contains(where: { $0.name == "gatehouse.sign_in" })
            && has("POST /v1/decide", trace: logTrace) && spans.contains(where: { $0.name == DecisionSpan.recordWrite }))
        {
            let next = try await receiver.nextLine(within: .seconds(120))
            raw.append(next)
            if let span = try? JSONDecoder().decode(ExportedSpan.self, from: Data(next.utf8)) { spans.append(span) }
        }
        raw += receiver.unreadLines()
        #expect(!raw.contains { $0.contains("\"error\"") }, "the receiver refused an export: \(raw.filter { $0.contains("\"error\"") })")

        // The request's server span continues the caller's trace, with the HTTP attributes.
        let request = try #require(spans.first { $0.name == "POST /v1/decide" && $0.traceId == traceId })
        #expect(request.parentSpanId == parentSpan)
        #expect(request.kind == 2)  // SPAN_KIND_SERVER
        #expect(request.service == "gatehouse-tracing-test")
        #expect(request.string("http.request.method") == "POST")
        #expect(request.string("http.route") == "/v1/decide")
        #expect(request.int("http.response.status_code") == 200)

        // Its children: the bearer resolved (the cache's answer), the decision, the offer to the decision log.
        let children = spans.filter { $0.traceId == traceId && $0.parentSpanId == request.spanId }
        let bearer = try #require(children.first { $0.name == DecisionSpan.bearer }, "\(children.map(\.name))")
        #expect(["hit", "miss"].contains(bearer.string("gatehouse.session.cache") ?? ""))
        #expect(bearer.string("gatehouse.bearer.outcome") == "live")
        let decided = try #require(children.first { $0.name == DecisionSpan.decide })
        #expect(decided.string("gatehouse.policy.hash") == policyHash)
        #expect(decided.string("gatehouse.action") == "ai_suggestions")
        #expect(decided.string("gatehouse.resource.type") == "app")
        #expect(decided.string("gatehouse.decision") == decision.object["decision"] as? String)
        #expect(decided.string("gatehouse.reason") == decision.object["reason"] as? String)
        #expect(children.contains { $0.name == DecisionSpan.record })

        // Store statements (under a sign-in here): the system, the operation and the table, no values.
        let signIn = try #require(spans.first { $0.name == "gatehouse.sign_in" && $0.string("gatehouse.sign_in.method") == "pin" })
        #expect(signIn.string("gatehouse.sign_in.outcome") == "success")
        let statements = spans.filter { $0.traceId == signIn.traceId && $0.string("db.system") == "sqlite" && $0.string("db.operation.name") != nil }
        #expect(!statements.isEmpty, "\(spans.filter { $0.traceId == signIn.traceId }.map(\.name))")
        #expect(statements.allSatisfy { $0.string("db.collection.name") != nil || $0.string("gatehouse.store.statement") != nil })
        let write = try #require(spans.first { $0.name == DecisionSpan.recordWrite })
        #expect((write.int("gatehouse.decision_log.records") ?? 0) >= 1)
        #expect(write.parentSpanId.isEmpty || write.parentSpanId == String(repeating: "0", count: 16))

        // No secret and no account anywhere: not in a span, not in a log line.
        let logged = try String(contentsOf: log, encoding: .utf8)
        for (what, secret) in [("access token", access), ("refresh token", refresh), ("other access token", other), ("PIN", pin),
            ("share code", shareCode), ("user id", userId), ("other user id", otherUser)]
        {
            #expect(!raw.contains { $0.contains(secret) }, "a span carries the \(what)")
            #expect(!logged.contains(secret), "the log carries the \(what)")
        }
        // The malformed request's log line names its trace.
        let warning = try #require(logged.split(separator: "\n").first { $0.contains("malformed request") }, "log: \(logged)")
        #expect(warning.contains("trace_id=\(logTrace)"), "\(warning)")
    }

    @Test func tracingIsOffUnlessAnEndpointIsGiven() async throws {
        let t = try TestServer()
        let server = try await Program(
            ServedProcess.binary, ["serve", "--host", "127.0.0.1", "--port", "0", "--policies", t.policies.path],
            environment: .only(ServedProcess.environment.merging(["GATEHOUSE_DATABASE": t.dir.appendingPathComponent("off.sqlite").path, "OTEL_SERVICE_NAME": "x"]) { _, given in given })
        ).start()
        defer { server.kill() }
        let line = try await server.nextLine(within: .seconds(60))
        let base = try #require(URL(string: String(line.dropFirst("listening on ".count))), "first line: \(line)")
        let problem = try await Self.send(
            "POST", base.appendingPathComponent("v1/decide"), "{not json", headers: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        #expect(problem.status == 400)
        #expect(problem.object["traceId"] == nil, "\(problem.text)")
        _ = await server.stop()
    }

    @Test func aProtocolThisBuildDoesNotExportIsAUsageErrorNamingTheVariable() async throws {
        let t = try TestServer()
        let finished = try await Program(
            ServedProcess.binary, ["serve", "--host", "127.0.0.1", "--port", "0", "--policies", t.policies.path],
            environment: .only(
                ServedProcess.environment.merging([
                    "GATEHOUSE_DATABASE": t.dir.appendingPathComponent("grpc.sqlite").path, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
                    "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                ]) { _, given in given })
        ).run(timeLimit: .seconds(120))
        #expect(finished.status == 64)
        #expect(finished.standardError.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "\(finished.standardError)")
    }
}

/// The facade's span names (Gatehouse's `DecisionTracing.Name`), spelled here as a reader of the traces sees them.
enum DecisionSpan {
    static let bearer = "gatehouse.bearer.resolve"
    static let decide = "gatehouse.decide"
    static let record = "gatehouse.decision_log.offer"
    static let recordWrite = "gatehouse.decision_log.write"
}
