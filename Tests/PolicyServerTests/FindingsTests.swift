import Foundation
import GRDB
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import Logging
import PolicyServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 22, section 2: the HTTP findings F2 to F11 and the small ones, each shown on the server.
@Suite struct FindingsTests {
    static let proAI = #"{"subject": {"id": "u1", "tier": "pro"}, "action": "ai_suggestions", "resource": {"type": "app"}}"#
    static let signedOutAI = #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#

    // MARK: F2

    /// Only the types the policy declares with member roles can be created as spaces: `app` is refused, naming
    /// the field; leaving the type out creates the set's one shared type (`project` here).
    @Test func f2OnlySharedSpaceTypesCanBeCreated() async throws {
        let t = try TestServer()
        try await t.app.test(.router) { client in
            let (token, _) = try await anonymous(client)
            try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(token), body: body(#"{"name": "x", "type": "app"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "type")
            }
            try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(token), body: body(#"{"name": "x", "type": "nothing"}"#)) { r in
                #expect(r.status == .badRequest)
            }
            try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(token), body: body(#"{"name": "x", "type": "project"}"#)) { r in
                #expect(r.status == .created)
            }
        }
    }

    /// A free user at the sources limit stays there whatever resource id the decision names: its own new
    /// space, another user's, an id nobody has.
    @Test func f2AppWideUsageIsAlwaysTheUsersOwn() async throws {
        let t = try TestServer { $0.operatorTokenDigest = try? OperatorToken.digest(ofConfigured: "operator-token-of-the-test") }
        try await t.app.test(.router) { client in
            let (token, userId) = try await anonymous(client)
            let (other, _) = try await anonymous(client)
            try await client.execute(
                uri: "/v1/operator/users/\(userId)/usage", method: .post, headers: bearer("operator-token-of-the-test"),
                body: body(#"{"counter": "sources", "by": 50}"#)
            ) { r in #expect(r.status == .ok) }
            var ids: [String] = ["nobody-has-this"]
            for owner in [token, other] {
                try await client.execute(uri: "/v1/spaces", method: .post, headers: bearer(owner), body: body(#"{"name": "x", "type": "project"}"#)) { r in
                    if let id = r.object["resourceId"] as? String { ids.append(id) }
                }
            }
            for id in ids {
                let request = #"{"action": "add_source", "resource": {"type": "app", "id": "\#(id)"}}"#
                try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(token), body: body(request)) { r in
                    #expect(r.object["reason"] as? String == "limit_exceeded", "\(id): \(r.text)")
                }
            }
        }
    }
}

/// Log records kept in memory, for tests that count what was logged.
final class LogRecords: @unchecked Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
    }
    private let lock = NSLock()
    private var records: [Record] = []

    var all: [Record] { lock.withLock { records } }

    func handler() -> any LogHandler { Handler(records: self) }

    func append(_ record: Record) { lock.withLock { records.append(record) } }

    struct Handler: LogHandler {
        let records: LogRecords
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { records.append(Record(level: event.level, message: event.message.description)) }
    }
}
