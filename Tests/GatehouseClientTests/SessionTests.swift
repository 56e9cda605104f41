import Foundation
@testable import GatehouseClient
import Synchronization
import Testing
import GatehouseTestSupport

/// A clock a test moves: the client judges its access token's expiry by it.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    var now: @Sendable () -> Date { { Date().addingTimeInterval(self.offset.withLock { $0 }) } }
}

/// The client's session against a real server: refresh, its failure, throttling, and what never shows a token.
@Suite(.serialized, .startsServers) struct SessionTests {
    /// A refresh token reused after the grace window revokes the session at the server; the client's next call meets
    /// 401, its refresh is refused, and it signs out, reporting `.ended` once however many calls were waiting.
    @Test func refreshReuseAfterTheGraceWindowSignsTheClientOutOnce() async throws {
        try await withServer("mimisupply", environment: ["GATEHOUSE_REFRESH_GRACE_PERIOD": "0.2"]) { server in
            let store = InMemoryTokenStore()
            let clock = TestClock()
            let client = GatehouseClient(serverURL: server.url, tokenStore: store, refreshMargin: 0, clock: clock.now)
            let userId = try await client.register(username: "mimi.driver", pin: "604219")
            let first = try #require(store.load())

            // The client believes its access token expired: its next call refreshes first (one refresh).
            clock.advance(by: 3600)
            let refreshes = try await server.refreshes()
            #expect(try await client.me().userId == userId)
            #expect(try await server.refreshes() == refreshes + 1)
            let second = try #require(store.load())
            #expect(second.refreshToken != first.refreshToken)
            clock.advance(by: -3600)

            // Someone else presents the first refresh token after the grace window: the server revokes the family.
            try await Task.sleep(for: .milliseconds(400))
            let stolen = await thrownClientError {
                _ = try await server.operatorAPI.postAuthRefresh(body: .json(.init(refreshToken: first.refreshToken))).ok
            }
            #expect(stolen?.isUnauthenticated == true)

            var states = await client.sessionStates().makeAsyncIterator()
            #expect(await states.next() == .signedIn(userId: userId))
            let failures = await withTaskGroup(of: GatehouseClientError?.self) { group in
                for _ in 0..<10 { group.addTask { await thrownClientError { _ = try await client.me() } } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(failures.count == 10 && failures.allSatisfy { $0 != nil })
            #expect(failures.contains { $0?.code == GatehouseClientError.notSignedIn })
            #expect(await states.next() == .ended(userId: userId))
            #expect(await client.state == .ended(userId: userId))
            #expect(store.load() == nil)
            // Nothing more is reported: a later change is the next thing the stream yields.
            try await client.signInAnonymously()
            #expect(await states.next()?.isSignedIn == true)
        }
    }

    /// A device clock two hours ahead (set by hand) would make every access token look expired: the client judges
    /// expiry by the server's `Date` instead, so five calls refresh nothing and the refresh token stays the same.
    @Test func aDeviceClockAheadOfTheServerDoesNotRefreshEveryCall() async throws {
        try await withServer("mimisupply") { server in
            let store = InMemoryTokenStore()
            let clock = TestClock()
            clock.advance(by: 7200)
            let client = GatehouseClient(serverURL: server.url, tokenStore: store, refreshMargin: 30, clock: clock.now)
            let userId = try await client.register(username: "mimi.skewed", pin: "604219")
            let first = try #require(store.load())
            let refreshes = try await server.refreshes()
            for _ in 0..<5 { #expect(try await client.me().userId == userId) }
            #expect(try await server.refreshes() == refreshes)
            #expect(store.load()?.refreshToken == first.refreshToken)
        }
    }

    /// A phone holding a session that a tablet of the same account ended with sign-out everywhere.
    static func signedOutElsewhere(_ server: LiveServer, _ username: String) async throws -> GatehouseClient {
        let phone = server.client()
        let tablet = server.client()
        _ = try await phone.register(username: username, pin: "918273")
        try await tablet.signIn(username: username, pin: "918273")
        try await tablet.signOutEverywhere()
        #expect(await tablet.state == .signedOut)
        return phone
    }

    /// An access token the server refuses before the client's clock says it expired (revoked by sign-out everywhere
    /// from another device): the call is refreshed once; the refresh is refused too, so the client signs out.
    @Test func aCallRefusedWith401IsRefreshedOnceThenTheSessionEnds() async throws {
        try await withServer("mimisupply") { server in
            let phone = try await Self.signedOutElsewhere(server, "mimi.partner")
            let refreshes = try await server.refreshes()
            let error = await thrownClientError { _ = try await phone.me() }
            #expect(error?.code == GatehouseClientError.notSignedIn)
            #expect(await phone.state.isSignedIn == false)
            #expect(try await server.refreshes() == refreshes)  // the refresh was tried and refused: no success counted
        }
    }

    /// A decision made with an access token the server no longer accepts is a signed-out subject's (200, not a 401),
    /// with `WWW-Authenticate: Bearer error="invalid_token"` beside it: a client that still thought the token live (its
    /// estimate of the server's time a second behind on a loaded machine; here a negative margin) refreshes once and
    /// asks again, for each decision route and plans. An anonymous session's `unauthenticated` answers carry no such
    /// header and refresh nothing.
    @Test func aDecisionForARefusedTokenIsRefreshedOnceAndAskedAgain() async throws {
        try await withServer("mimisupply", environment: ["GATEHOUSE_ACCESS_TOKEN_LIFETIME": "2"]) { server in
            let store = InMemoryTokenStore()
            let client = GatehouseClient(serverURL: server.url, tokenStore: store, refreshMargin: -3600)
            let market = Resource(type: "marketplace")
            try await client.signInAnonymously()
            let anonymous = try await server.refreshes()
            #expect(try await client.decide(action: "checkout", resource: market).reason == .unauthenticated)
            #expect(try await server.refreshes() == anonymous)

            try await client.register(username: "mimi.late", pin: "604219")
            let first = try #require(store.load())
            func untilExpired() async throws {
                let wait = (store.load()?.accessExpiresAt.timeIntervalSinceNow ?? 0) + 0.5
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
            }
            try await untilExpired()
            let refreshes = try await server.refreshes()
            let decision = try await client.decide(action: "driver_mode", resource: market)
            #expect(decision.reason == .roleRequired, "\(decision)")
            #expect(try await server.refreshes() == refreshes + 1)
            #expect(store.load()?.accessToken != first.accessToken)
            try await untilExpired()
            let checked = try await client.check(actions: ["driver_mode", "browse"], resource: market)
            #expect(checked["driver_mode"]?.reason == .roleRequired && checked["browse"]?.isAllowed == true, "\(checked)")
            try await untilExpired()
            let batch = try await client.decideBatch([DecisionQuery(action: "driver_mode", resource: market)])
            #expect((try? batch[0].get())?.reason == .roleRequired)
            try await untilExpired()
            #expect(try await client.explain(action: "driver_mode", resource: market).decision.reason == .roleRequired)
            try await untilExpired()
            #expect(try await client.plan(action: "driver_mode", resourceType: "marketplace").reason == "role_required")
            #expect(try await server.refreshes() == refreshes + 5)
        }
    }

    /// A decision asked with a session the server has ended (sign-out everywhere on another device): the token is
    /// refused, the refresh too, and the session ends here (`.ended`); the decision is then answered for a signed-out
    /// subject, which is what the app now is, rather than failing with `not_signed_in`.
    @Test func aDecisionWhoseSessionEndedIsAnsweredSignedOut() async throws {
        try await withServer("mimisupply") { server in
            let phone = try await Self.signedOutElsewhere(server, "mimi.ended")
            let market = Resource(type: "marketplace")
            let decision = try await phone.decide(action: "checkout", resource: market)
            #expect(decision.reason == .unauthenticated)
            #expect(await phone.state.isSignedIn == false)
            #expect(try await phone.decide(action: "browse", resource: market).isAllowed)
        }
    }

    /// A 429 reaches the caller with `retryAfter`, and the client does not try again on its own.
    @Test func throttledIsReportedWithRetryAfterAndNotRetried() async throws {
        try await withServer("mimisupply", environment: ["GATEHOUSE_SIGNIN_LIMIT": "2/60"]) { server in
            let client = server.client()
            try await client.signInAnonymously()
            try await client.signInAnonymously()
            let throttles = try await server.counter("gatehouse_throttled_total")
            let error = await thrownClientError { try await client.signInAnonymously() }
            #expect(error?.status == 429 && error?.code == GatehouseClientError.throttled)
            #expect((error?.retryAfter ?? 0) > 0)
            #expect(try await server.counter("gatehouse_throttled_total") == throttles + 1)
        }
    }

    /// Bad input comes back as the server's problem, naming the field.
    @Test func problemsCarryTheCodeAndTheField() async throws {
        try await withServer("research-crawler") { server in
            let client = server.client()
            let error = await thrownClientError { try await client.register(username: "x", pin: "12") }
            #expect(error?.status == 400 && error?.code == "invalid_input")
            #expect(error?.field != nil)
            #expect(error?.problem?.type == "urn:gatehouse:problem:invalid_input")
            let notSignedIn = await thrownClientError { _ = try await client.privacySettings() }
            #expect(notSignedIn?.code == GatehouseClientError.notSignedIn && notSignedIn?.status == nil)
        }
    }

    /// A session in the token store is picked up by the next client (the app's next launch).
    @Test func aStoredSessionIsRestored() async throws {
        try await withServer("research-crawler") { server in
            let store = InMemoryTokenStore()
            let userId = try await server.client(store: store).register(username: "restored.user", pin: "551203")
            let relaunched = server.client(store: store)
            #expect(await relaunched.state == .signedIn(userId: userId))
            #expect(try await relaunched.me().userId == userId)
        }
    }
}

/// What must never show a token or a key, whatever prints it.
@Suite(.startsServers) struct SecretHygieneTests {
    @Test func tokensAndKeysStayOutOfDescriptions() async throws {
        let pair = TokenPair(accessToken: "gha_secret-access", accessExpiresAt: Date(), refreshToken: "ghr_secret-refresh", userId: "u1")
        var dumped = ""
        dump(pair, to: &dumped)
        let key = SoftwareDeviceKey()
        dump(key, to: &dumped)
        let store = InMemoryTokenStore(pair)
        let client = GatehouseClient(serverURL: URL(string: "http://127.0.0.1:1")!, tokenStore: store)
        var clientDump = ""
        dump(client, to: &clientDump)
        dump(store, to: &clientDump)
        // The dump does reach the stored session (so the check below means something), as the redacted pair.
        #expect(clientDump.contains("<redacted>"), "\(clientDump)")
        dumped += clientDump
        for text in ["\(pair)", String(reflecting: pair), dumped, "\(store)", "\(key)", String(reflecting: key)] {
            #expect(!text.contains("secret"), "\(text)")
            #expect(!text.contains(key.rawRepresentation.base64EncodedString()))
            #expect(!text.contains("scalar"), "\(text)")
        }
        #expect("\(pair)".contains("u1"))
        let nonce = AppleSignInNonce(raw: "raw-nonce-value")
        #expect(!"\(nonce)".contains("raw-nonce-value"))
        #expect(nonce.sha256.count == 64)
    }

    @Test func theInMemoryStoreKeepsAndForgets() {
        let store = InMemoryTokenStore()
        #expect(store.load() == nil)
        let pair = TokenPair(accessToken: "a", accessExpiresAt: Date(timeIntervalSince1970: 1_800_000_000), refreshToken: "r", userId: "u")
        store.save(pair)
        #expect(store.load() == pair)
        store.clear()
        #expect(store.load() == nil)
    }

    @Test func aTransportFailureKeepsOnlyTheErrorsKind() async {
        // Nothing listens on port 9 of loopback (discard): the call fails before any answer.
        let client = GatehouseClient(serverURL: URL(string: "http://127.0.0.1:9")!)
        let error = await thrownClientError { try await client.signInAnonymously() }
        #expect(error?.code == GatehouseClientError.transport)
        #expect(!(error?.description.contains("Authorization") ?? true))
    }
}

/// The server's time from an answer's `Date` header: the IMF-fixdate form only, and the offset it gives.
struct ServerClockTests {
    @Test func parsesTheIMFFixdateAndNothingElse() {
        #expect(ServerClock.parseHTTPDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(ServerClock.parseHTTPDate("Thu, 26 Nov 2026 01:02:08 GMT") == Date(timeIntervalSince1970: 1_795_654_928))
        for bad in [
            "", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Now 1994 08:49:37 GMT",
        ] {
            #expect(ServerClock.parseHTTPDate(bad) == nil, "\(bad)")
        }
    }

    @Test func theDeviceClockIsCorrectedByTheLastOffsetSeen() {
        let device = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = ServerClock(device: { device })
        #expect(clock.now() == device)
        // The header's whole second was read somewhere after the request left: the server's clock read at most
        // 08:49:38 then, and the estimate takes that bound (never behind the server).
        clock.observe(dateHeader: "Sun, 06 Nov 1994 08:49:37 GMT", sentAt: device)
        #expect(clock.now() == Date(timeIntervalSince1970: 784_111_778))
        clock.observe(dateHeader: "not a date", sentAt: device)
        #expect(clock.now() == Date(timeIntervalSince1970: 784_111_778))
    }
}
