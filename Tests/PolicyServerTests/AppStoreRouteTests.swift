import AppStoreTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Identity
import PolicyModel
import PolicyServer
import Testing
import GatehouseTestSupport

/// Issue 22 §1 over HTTP: `POST /v1/me/purchases {"signedTransaction"}` and `POST /v1/app-store/notifications`,
/// with a test CA configured as an extra App Store root (the `--app-store-root-certificate` path).
@Suite(.startsServers) struct AppStoreRouteTests {
    static let bundleId = "com.researchapp.ios"
    static let proMonthly = "com.researchapp.pro.monthly"
    static let aiSuggestions = #"{"action": "ai_suggestions", "resource": {"type": "app"}}"#

    static func server(_ ca: AppStoreTestCA?) throws -> TestServer {
        try TestServer { settings in
            guard let ca else { return }
            settings.appStore.bundleIds = [bundleId]
            try! settings.appStore.addRootCertificate(ca.rootDER)
        }
    }

    static func signed(_ ca: AppStoreTestCA, original: String = "7000000000000001", id: String? = nil, token: String? = nil, expires: Date) -> String {
        ca.sign(AppStoreTestCA.transaction(
            bundleId: bundleId, productId: proMonthly, originalTransactionId: original, transactionId: id, signedAt: Date(), expiresAt: expires,
            appAccountToken: token))
    }

    func register(_ client: some TestClientProtocol, _ name: String) async throws -> String {
        let user = try await client.execute(uri: "/v1/auth/pin/register", method: .post, body: body(#"{"username": "\#(name)", "pin": "4826"}"#)) { $0.object }
        return try #require(user["accessToken"] as? String)
    }

    @Test func aSignedTransactionSetsTheTierAndAProFeatureIsAllowed() async throws {
        let ca = try AppStoreTestCA(now: Date())
        let t = try Self.server(ca)
        let expires = Date().addingTimeInterval(30 * 86400)
        try await t.app.test(.router) { client in
            let access = try await register(client, "buyer")
            let token = try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                try #require(r.object["appAccountToken"] as? String)
            }
            #expect(UUID(uuidString: token) != nil)
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.aiSuggestions)) { r in
                #expect(r.object["reason"] as? String == "requires_upgrade")
            }
            let jws = Self.signed(ca, token: token, expires: expires)
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "\#(jws)"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["outcome"] as? String == "applied")
                #expect(r.object["tier"] as? String == "pro")
                #expect(r.object["expiresAt"] as? String != nil)
            }
            try await client.execute(uri: "/v1/decide", method: .post, headers: bearer(access), body: body(Self.aiSuggestions)) { r in
                #expect(r.object["decision"] as? String == "allow")
            }
            // The same transaction again: idempotent.
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "\#(jws)"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["outcome"] as? String == "replayed")
            }
            // Another account presenting it is refused; so is one whose token it does not carry.
            let other = try await register(client, "freeloader")
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(other), body: body(#"{"signedTransaction": "\#(jws)"}"#)) { r in
                #expect(r.status == .forbidden)
                #expect(r.object["code"] as? String == "app_account_mismatch")
                #expect(!r.text.contains(jws))
            }
            let untagged = Self.signed(ca, expires: expires)
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(other), body: body(#"{"signedTransaction": "\#(untagged)"}"#)) { r in
                #expect(r.status == .conflict)
                #expect(r.object["code"] as? String == "purchase_owned_elsewhere")
            }
        }
    }

    @Test func aForgedTransactionIsAProblemNamingTheCheckAndTheField() async throws {
        let ca = try AppStoreTestCA(now: Date())
        let t = try Self.server(ca)
        try await t.app.test(.router) { client in
            let access = try await register(client, "forger")
            let other = try AppStoreTestCA(name: "Other", now: Date())
            let foreign = Self.signed(other, expires: Date().addingTimeInterval(86400))
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "\#(foreign)"}"#)) { r in
                #expect(r.status == .unprocessableContent)
                #expect(r.headers[.contentType] == "application/problem+json")
                #expect(r.object["code"] as? String == "app_store_untrusted_chain")
                #expect(r.object["field"] as? String == "signedTransaction.x5c")
            }
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "a.b"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["code"] as? String == "invalid_signed_transaction")
            }
            try await client.execute(uri: "/v1/me/purchases", method: .post, body: body(#"{"signedTransaction": "a.b.c"}"#)) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                #expect(r.object["tier"] is NSNull)
            }
        }
    }

    @Test func notificationsNeedNoBearerAndForgedOnesAreRefused() async throws {
        let ca = try AppStoreTestCA(now: Date())
        let t = try Self.server(ca)
        try await t.app.test(.router) { client in
            let access = try await register(client, "renewer")
            let first = Self.signed(ca, expires: Date().addingTimeInterval(86400))
            _ = try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "\#(first)"}"#)) { $0.status }
            let renewedUntil = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 31 * 86400).rounded(.down))
            let renewed = Self.signed(ca, id: "7000000000000002", expires: renewedUntil)
            func payload(_ type: String, by signer: AppStoreTestCA, info: String?) -> String {
                signer.sign(AppStoreTestCA.notification(type: type, bundleId: Self.bundleId, signedAt: Date(), signedTransactionInfo: info))
            }
            let didRenew = payload("DID_RENEW", by: ca, info: renewed)
            try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"signedPayload": "\#(didRenew)"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["outcome"] as? String == "applied")
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                #expect(r.object["tier"] as? String == "pro")
                #expect(r.object["subscriptionExpiresAt"] as? String == Timestamp.format(renewedUntil))
            }
            let test = payload("TEST", by: ca, info: nil)
            try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"signedPayload": "\#(test)"}"#)) { r in
                #expect(r.status == .ok)
                #expect(r.object["outcome"] as? String == "ignored_type")
            }
            let forged = payload("REFUND", by: try AppStoreTestCA(name: "Other", now: Date()), info: renewed)
            try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"signedPayload": "\#(forged)"}"#)) { r in
                #expect(r.status == .unprocessableContent)
                #expect(r.object["code"] as? String == "app_store_untrusted_chain")
            }
            try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"payload": "x"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect(r.object["field"] as? String == "payload")
            }
            try await client.execute(uri: "/v1/me", method: .get, headers: bearer(access)) { r in
                #expect(r.object["tier"] as? String == "pro")
            }
        }
    }

    @Test func withoutABundleIdPurchasesAreNotConfigured() async throws {
        let t = try Self.server(nil)
        try await t.app.test(.router) { client in
            let access = try await register(client, "early")
            try await client.execute(uri: "/v1/me/purchases", method: .post, headers: bearer(access), body: body(#"{"signedTransaction": "a.b.c"}"#)) { r in
                #expect(r.status == .notImplemented)
                #expect(r.object["code"] as? String == "purchases_not_configured")
            }
            try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"signedPayload": "a.b.c"}"#)) { r in
                #expect(r.status == .notImplemented)
                #expect(r.object["code"] as? String == "purchases_not_configured")
            }
        }
    }

    @Test func theAppStoreOptionsComeFromTheCommandLineOrTheEnvironment() throws {
        let ca = try AppStoreTestCA(now: Date())
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("app-store-roots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let der = dir.appendingPathComponent("root.cer")
        let pem = dir.appendingPathComponent("root.pem")
        let junk = dir.appendingPathComponent("junk.cer")
        try ca.rootDER.write(to: der)
        try Data(ca.rootPEM.utf8).write(to: pem)
        try Data("junk".utf8).write(to: junk)
        var options = ServerSettings.Options()
        options.policies = "p"
        options.database = "d"
        let defaults = try ServerSettings.resolve(options, environment: [:])
        #expect(!defaults.appStore.isConfigured && defaults.appStore.environments == [.production] && defaults.appStore.additionalRoots.isEmpty)

        let fromEnvironment = try ServerSettings.resolve(
            options,
            environment: [
                "GATEHOUSE_APP_STORE_BUNDLE_ID": "com.a, com.b", "GATEHOUSE_APP_STORE_ENVIRONMENT": "Production,Sandbox",
                "GATEHOUSE_APP_STORE_ROOT_CERTIFICATE": "\(der.path),\(pem.path)",
            ])
        #expect(fromEnvironment.appStore.bundleIds == ["com.a", "com.b"])
        #expect(fromEnvironment.appStore.environments == [.production, .sandbox])
        #expect(fromEnvironment.appStore.additionalRoots == [ca.rootDER, ca.rootDER])

        options.appStoreBundleIds = ["com.c"]
        options.appStoreEnvironments = ["Xcode"]
        options.appStoreRootCertificates = [pem.path]
        let fromOptions = try ServerSettings.resolve(options, environment: ["GATEHOUSE_APP_STORE_BUNDLE_ID": "com.a"])
        #expect(fromOptions.appStore.bundleIds == ["com.c"] && fromOptions.appStore.environments == [.xcode])
        #expect(fromOptions.appStore.additionalRoots == [ca.rootDER])

        options.appStoreEnvironments = ["production"]
        let environment = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
        #expect(environment?.description.contains("--app-store-environment") == true)
        options.appStoreEnvironments = []
        options.appStoreRootCertificates = [junk.path]
        let root = #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
        #expect(root?.description.contains("--app-store-root-certificate") == true)
        options.appStoreRootCertificates = [dir.appendingPathComponent("missing.cer").path]
        #expect(throws: ServerSettings.Problem.self) { try ServerSettings.resolve(options, environment: [:]) }
    }

    /// N4 (issue 36): the notification route has a per-client limit of its own (`GATEHOUSE_NOTIFICATION_LIMIT`),
    /// checked before any verification, so replaying notifications at request rate costs one bucket lookup each.
    @Test func theNotificationRouteHasAPerClientLimit() async throws {
        let t = try TestServer(configure: fromEnvironment(["GATEHOUSE_NOTIFICATION_LIMIT": "2/3600"]))
        try await t.app.test(.router) { client in
            var statuses: [UInt] = []
            for _ in 0..<3 {
                statuses.append(
                    try await client.execute(uri: "/v1/app-store/notifications", method: .post, body: body(#"{"signedPayload": "x.y.z"}"#)) { UInt($0.status.code) })
            }
            #expect(statuses.prefix(2).allSatisfy { $0 != 429 }, "\(statuses)")
            #expect(statuses.last == 429, "\(statuses)")
        }
    }
}
