public import Foundation
public import PolicyModel
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
internal import OpenAPIRuntime

/// The client of `policy serve` an app holds for its lifetime: sign-in, the session's tokens with single-flight
/// refresh, decisions for the session's subject, and the account routes.
///
/// Decisions come back as the engine's own `Decision` values. The session persists in a `TokenStore` (the Keychain on
/// Apple platforms); tokens never appear in a description, an error or a log line of this library.
///
/// Refresh: before each call the access token's expiry is checked against the server's time (the device clock
/// corrected by the last answer's `Date` header, `ServerClock`), less `refreshMargin`; an
/// expired one is refreshed once however many calls meet it at the same time (they all wait for that one refresh
/// and go on with the new pair). A call the server refuses with 401 `unauthenticated` is refreshed and retried
/// once, and so is a decision, check, batch, explanation or plan the server made for a signed-out subject because it
/// did not accept the token (`WWW-Authenticate: Bearer error="invalid_token"` beside the 200: expired by the server's
/// clock, revoked): the caller gets the session's answer, never a signed-out one in its place. A refresh refused with `unauthenticated` ends the session: the client forgets it, reports `.ended` once on
/// `sessionStates()`, and every waiting call fails with `not_signed_in`, but for decisions and plans, which are
/// answered for the signed-out subject the app now is. A 429 is never retried: the error carries
/// `retryAfter`.
public actor GatehouseClient: CustomReflectable {
    let api: Client
    /// The server's base URL.
    public nonisolated let serverURL: URL
    /// The client's own session (its delegate guards redirects), invalidated when the client goes; the bundle event
    /// stream opens a session of its own with its configuration.
    nonisolated let urlSession: URLSession
    private let store: any TokenStore
    private let clock: ServerClock
    private let refreshMargin: TimeInterval
    private var tokens: TokenPair?
    private var refreshing: Task<TokenPair, any Error>?
    /// The session's state now; `sessionStates()` streams its changes.
    public private(set) var state: SessionState
    private var observers: [UUID: AsyncStream<SessionState>.Continuation] = [:]
    /// The device's copy of the policy (`decideLocally`), refreshed from `GET /v1/bundle`; nil when not configured.
    public nonisolated let policyBundles: PolicyBundleStore?
    var bundleRefresh: Task<Void, Never>?
    /// The bundle event stream's listener (`startPolicyBundleUpdates`).
    var bundleUpdates: Task<Void, Never>?
    /// Where `policyRevisions()` streams each installed revision.
    nonisolated let revisionFeeds = RevisionFeeds()

    /// A client of the server at `serverURL` (`http://127.0.0.1:8080`), restoring the session `tokenStore` holds.
    ///
    /// - Parameters:
    ///   - serverURL: the server's base URL; the API's paths (`/v1/decide`, ...) are appended to it.
    ///   - tokenStore: where the session is kept (`KeychainTokenStore` in an app; in memory by default).
    ///   - session: the `URLSession` whose configuration requests go through (timeouts, caches, protocol classes). The
    ///     client makes its own session of that configuration, with a delegate of its own that never follows a redirect
    ///     to another origin (scheme, host or port): the access token, a refresh token or a PIN goes only to `serverURL`'s
    ///     origin, and a refused redirect fails with `redirect_refused`. The given session's delegate is not used.
    ///   - allowsInsecureHTTP: allow plain `http://` to a host other than this machine, for development only. Without
    ///     it, every call to such a URL fails with `insecure_transport` before anything is sent; `http://` to
    ///     127.0.0.1, `::1` or `localhost` is always allowed.
    ///   - refreshMargin: how long before its expiry an access token is refreshed (covers clock skew and latency).
    ///   - clock: the device's clock (tests move it); expiry is judged by it corrected by the offset each answer's
    ///     `Date` header shows, so a device clock set wrong neither refreshes every call nor sends expired tokens.
    ///   - policyBundles: the store of signed policy bundles `decideLocally` answers from (its pinned key and its
    ///     directory); it loads the last good bundle now, before any network.
    ///   - traceContext: the app's tracer, asked before every request for the W3C Trace Context of the call in progress
    ///     (`["traceparent": "00-<trace id>-<span id>-01", "tracestate": ...]`, what a propagator's `inject` writes); the
    ///     server continues that trace. Only `traceparent` and `tracestate` are sent; nil (the default) sends none. It
    ///     runs on the calling task, so a task-local span context (swift-distributed-tracing's `ServiceContext.current`)
    ///     is the caller's.
    public init(
        serverURL: URL, tokenStore: any TokenStore = InMemoryTokenStore(), session: URLSession = .shared,
        refreshMargin: TimeInterval = 30, clock: @escaping @Sendable () -> Date = { Date() }, policyBundles: PolicyBundleStore? = nil,
        allowsInsecureHTTP: Bool = false, traceContext: (@Sendable () -> [String: String])? = nil
    ) {
        self.policyBundles = policyBundles
        let serverClock = ServerClock(device: clock)
        self.clock = serverClock
        let transport = GuardedTransport(configuration: session.configuration)
        urlSession = transport.session
        api = Client(
            serverURL: serverURL, configuration: Configuration(dateTranscoder: ContractDateTranscoder()), transport: transport,
            middlewares: [
                GatehouseMiddleware(
                    clock: serverClock, refusal: CredentialPolicy.refusal(serverURL: serverURL, allowsInsecureHTTP: allowsInsecureHTTP),
                    traceContext: traceContext)
            ])
        self.serverURL = serverURL
        store = tokenStore
        self.refreshMargin = refreshMargin
        let restored = (try? tokenStore.load()) ?? nil
        tokens = restored
        state = restored.map { .signedIn(userId: $0.userId) } ?? .signedOut
    }

    deinit { urlSession.finishTasksAndInvalidate() }

    /// The server and the token store only: reflecting the generated client would walk the URL session's
    /// Foundation objects, which Swift's runtime cannot always reflect on Linux (`dump` crashed on them), and the
    /// session's tokens are shown only as the store shows them (redacted).
    public nonisolated var customMirror: Mirror {
        Mirror(self, children: ["serverURL": serverURL, "tokenStore": store], displayStyle: .class)
    }

    // MARK: - Session state

    /// The current state, then every change, until the stream's consumer stops.
    public func sessionStates() -> AsyncStream<SessionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionState.self, bufferingPolicy: .bufferingNewest(32))
        let id = UUID()
        observers[id] = continuation
        continuation.yield(state)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    private func removeObserver(_ id: UUID) { observers[id] = nil }

    private func publish(_ next: SessionState) {
        guard next != state else { return }
        state = next
        for observer in observers.values { observer.yield(next) }
    }

    /// The signed-in user's id, nil without a session.
    public var userId: String? { tokens?.userId }

    /// Adopts a new pair from a sign-in or refresh, and keeps it in the store.
    private func adopt(_ pair: TokenPair) {
        tokens = pair
        try? store.save(pair)
        publish(.signedIn(userId: pair.userId))
    }

    /// Forgets the session; `ended` when the server ended it, `signedOut` when the user did.
    private func forget(ended: Bool) {
        guard let old = tokens else { return }
        tokens = nil
        try? store.clear()
        publish(ended ? .ended(userId: old.userId) : .signedOut)
    }

    // MARK: - Tokens and the single-flight refresh

    /// The access token to send now: refreshed first when it has expired by the server's time; nil without a session.
    private func currentAccessToken() async throws -> String? {
        guard let pair = tokens else { return nil }
        if pair.accessExpiresAt.timeIntervalSince(clock.now()) > refreshMargin { return pair.accessToken }
        return try await refreshed(replacing: pair.accessToken).accessToken
    }

    /// A pair newer than the one whose access token is `stale`: the one already adopted, the refresh in flight, or a
    /// new refresh (exactly one at a time).
    private func refreshed(replacing stale: String) async throws -> TokenPair {
        if let refreshing { return try await refreshing.value }
        guard let pair = tokens else { throw GatehouseClientError.missingSession() }
        if pair.accessToken != stale { return pair }
        let task = Task { try await self.performRefresh(pair) }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    private func performRefresh(_ pair: TokenPair) async throws -> TokenPair {
        do {
            let next = try await Bearer.$token.withValue(nil) {
                try await api.postAuthRefresh(body: .json(.init(refreshToken: pair.refreshToken))).ok.body.json
            }
            // A sign-out or another sign-in while the refresh was in flight wins: keep what is there now.
            guard tokens?.refreshToken == pair.refreshToken else {
                guard let current = tokens else { throw GatehouseClientError.missingSession("signed out during a refresh") }
                return current
            }
            adopt(next)
            return next
        } catch {
            let failure = clientError(error)
            if failure.isUnauthenticated, tokens?.refreshToken == pair.refreshToken {
                forget(ended: true)
                throw GatehouseClientError.missingSession("the server ended the session")
            }
            throw failure
        }
    }

    /// Runs a generated call with the session's bearer (none without a session): refreshed first when expired, and
    /// once more when a session was sent and refused (a 401 `unauthenticated`, or `invalid_token` beside an answer);
    /// when the refresh finds the session ended, a call that does not require one (decisions, plans) goes signed out.
    private func withBearer<T: Sendable>(
        requiringSession: Bool = true, _ call: @Sendable () async throws -> T
    ) async throws -> T {
        let token = try await currentAccessToken()
        if requiringSession, token == nil { throw GatehouseClientError.missingSession() }
        do {
            return try await Bearer.$token.withValue(token) { try await call() }
        } catch {
            let failure = clientError(error)
            guard failure.isUnauthenticated, let token else { throw failure }
            let next: String?
            do {
                next = try await refreshed(replacing: token).accessToken
            } catch let ended as GatehouseClientError where !requiringSession && ended.code == GatehouseClientError.notSignedIn {
                // The session ended (`.ended` is reported): a call that works signed out is answered signed out.
                next = nil
            }
            do {
                return try await Bearer.$token.withValue(next) { try await call() }
            } catch {
                throw clientError(error)
            }
        }
    }

    /// A call that takes no bearer (sign-in, nonce).
    private func anonymousCall<T: Sendable>(_ call: @Sendable () async throws -> T) async throws -> T {
        do {
            return try await Bearer.$token.withValue(nil) { try await call() }
        } catch {
            throw clientError(error)
        }
    }

    /// A sign-in call that takes no bearer: adopts the session it opens and answers its user id.
    private func openSession(_ call: @Sendable () async throws -> TokenPair) async throws -> String {
        let pair = try await anonymousCall(call)
        adopt(pair)
        return pair.userId
    }

    /// Adopts a step-up's token: a new access token when the auth level rose (the old one stopped working).
    private func adoptStepUp(_ stepUp: Components.Schemas.StepUp) {
        guard stepUp.rotated, var pair = tokens else { return }
        pair.accessToken = stepUp.accessToken
        adopt(pair)
    }

    // MARK: - Sign-in

    /// A new anonymous session (`POST /v1/auth/anonymous`): the policy treats it as signed out until a PIN, a device
    /// key or Apple verifies the user.
    @discardableResult
    public func signInAnonymously() async throws -> String {
        try await openSession { try await self.api.postAuthAnonymous().created.body.json }
    }

    /// A new account with a username and a PIN of 4 to 6 digits, signed in.
    @discardableResult
    public func register(username: String, pin: String) async throws -> String {
        try await openSession {
            try await self.api.postAuthPinRegister(body: .json(.init(username: username, pin: pin))).created.body.json
        }
    }

    /// Signs in with a username and PIN. Failures are `invalid_credentials`, `locked` or `throttled` (with
    /// `retryAfter`).
    @discardableResult
    public func signIn(username: String, pin: String) async throws -> String {
        try await openSession {
            try await self.api.postAuthPinSignin(body: .json(.init(username: username, pin: pin))).ok.body.json
        }
    }

    /// A single-use nonce from the server for one Sign in with Apple attempt.
    public func beginSignInWithApple() async throws -> AppleSignInNonce {
        let nonce = try await anonymousCall { try await self.api.postAuthAppleNonce().created.body.json.nonce }
        return AppleSignInNonce(raw: nonce)
    }

    /// Signs in with Apple's identity token (`ASAuthorizationAppleIDCredential.identityToken` as UTF-8) and the raw
    /// nonce whose SHA-256 the request carried. `fullName` arrives from Apple on the first sign-in only: pass it then.
    @discardableResult
    public func signInWithApple(identityToken: String, nonce: AppleSignInNonce, fullName: String? = nil) async throws -> String {
        try await openSession {
            try await self.api.postAuthApple(body: .json(.init(identityToken: identityToken, nonce: nonce.raw, fullName: fullName))).ok.body.json
        }
    }

    /// Links an Apple identity to the signed-in account (a PIN account that adds Sign in with Apple): the nonce from
    /// `beginSignInWithApple()`, the identity token Apple gave for it. Needs a recent verification.
    public func linkApple(identityToken: String, nonce: AppleSignInNonce, fullName: String? = nil) async throws {
        let stepUp = try await withBearer {
            try await self.api.postAuthAppleLink(body: .json(.init(identityToken: identityToken, nonce: nonce.raw, fullName: fullName))).ok.body.json
        }
        adoptStepUp(stepUp)
    }

    /// Removes the Apple identity from the signed-in account (it must keep another way in, such as a PIN).
    public func unlinkApple() async throws {
        _ = try await withBearer { try await self.api.deleteAuthAppleLink().noContent }
    }

    /// Changes the account's username. Needs a recent verification.
    public func setUsername(_ username: String) async throws {
        _ = try await withBearer { try await self.api.putMeUsername(body: .json(.init(username: username))).noContent }
    }

    /// Sets the PIN of the signed-in account (an anonymous session's first PIN, for ContaCasal's onboarding).
    public func setPIN(_ pin: String) async throws {
        let stepUp = try await withBearer { try await self.api.putAuthPin(body: .json(.init(pin: pin))).ok.body.json }
        adoptStepUp(stepUp)
    }

    /// Changes the PIN; the current one must match.
    public func changePIN(current: String, new: String) async throws {
        _ = try await withBearer { try await self.api.postAuthPinChange(body: .json(.init(currentPin: current, newPin: new))).noContent }
    }

    /// Verifies the user by PIN (step-up): decisions that need a fresh `pin` verification pass afterwards.
    public func verifyPIN(_ pin: String) async throws {
        let stepUp = try await withBearer { try await self.api.postAuthPinVerify(body: .json(.init(pin: pin))).ok.body.json }
        adoptStepUp(stepUp)
    }

    /// Enrols this device's key for `deviceId` (a stable id the app keeps, e.g. `identifierForVendor`).
    public func enrollDevice(_ deviceId: String, key: some DeviceKey) async throws {
        let publicKey = key.publicKey.base64EncodedString()
        _ = try await withBearer {
            try await self.api.postAuthDeviceEnroll(body: .json(.init(deviceId: deviceId, publicKey: publicKey))).noContent
        }
    }

    /// Verifies the user with the device key (the `biometric` level): a fresh challenge from the server, signed by
    /// `key`. After repeated failures the key is locked (`locked`) and the PIN is the way back (`verifyPIN`).
    public func verifyDevice(_ deviceId: String, key: some DeviceKey) async throws {
        let challengeText = try await withBearer {
            try await self.api.postAuthDeviceChallenge(body: .json(.init(deviceId: deviceId))).created.body.json.challenge
        }
        guard let challenge = Data(base64Encoded: challengeText) else {
            throw GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "the challenge is not base64")
        }
        let signature: Data
        do {
            signature = try key.signature(for: challenge)
        } catch {
            throw GatehouseClientError(code: "device_key_unavailable", detail: "the device key did not sign: \(type(of: error))")
        }
        let stepUp = try await withBearer {
            try await self.api.postAuthDeviceVerify(
                body: .json(.init(deviceId: deviceId, challenge: challengeText, signature: signature.base64EncodedString()))
            ).ok.body.json
        }
        adoptStepUp(stepUp)
    }

    /// Ends this session at the server and forgets it here (forgotten here even when the server cannot be reached).
    public func signOut() async throws {
        defer { forget(ended: false) }
        guard tokens != nil else { return }
        _ = try await withBearer { try await self.api.postAuthSignout().noContent }
    }

    /// Ends every session of this account, on every device, and forgets this one.
    public func signOutEverywhere() async throws {
        defer { forget(ended: false) }
        _ = try await withBearer { try await self.api.postAuthSignoutEverywhere().noContent }
    }

    // MARK: - Decisions

    /// Whether the session's subject may take `action` on `resource`, decided by the server's policy with the facts it
    /// holds (tier, roles, verification, membership, usage). Signed out, the server decides for a signed-out subject.
    public func decide(action: String, resource: Resource, context: Context = Context()) async throws -> Decision {
        let request = Request(action: action, resource: resource, context: context)
        return try await withBearer(requiringSession: false) { try await self.api.postDecide(body: .json(request)).ok.body.json }
    }

    /// The decision `decide` would give, with the trace of every check the policy made on the way.
    public func explain(action: String, resource: Resource, context: Context = Context()) async throws -> DecisionExplanation {
        let request = Request(action: action, resource: resource, context: context)
        return try await withBearer(requiringSession: false) { try await self.api.postExplain(body: .json(request)).ok.body.json }
    }

        /// A decision per action on one resource, for gating several buttons with one request.
    public func check(actions: [String], resource: Resource, context: Context = Context()) async throws -> [String: Decision] {
        let parts = try ContractParts(resource: resource, context: context)
        let decisions = try await withBearer(requiringSession: false) {
            try await self.api.postCheck(body: .json(.init(resource: parts.resource, actions: actions, context: parts.context))).ok.body.json
                .decisions.additionalProperties
        }
        return decisions
    }

    /// Many decisions by one policy version, in order; a query the server could not read fails alone.
    public func decideBatch(_ queries: [DecisionQuery]) async throws -> [Result<Decision, GatehouseClientError>] {
        let requests = try queries.map { query in
            try ContractParts.value(of: Request(action: query.action, resource: query.resource, context: query.context))
        }
        let items = try await withBearer(requiringSession: false) {
            try await self.api.postDecideBatch(body: .json(.init(requests: requests))).ok.body.json.decisions
        }
        return items.map { item in
            switch item {
            case .Decision(let decision): .success(decision)
            case .ItemError(let wrapped):
                .failure(GatehouseClientError(code: wrapped.error.code, detail: wrapped.error.detail, field: wrapped.error.field))
            }
        }
    }

    // MARK: - Lists and plans

    /// One page of the stored resources of `type` (a shared type: `space`, `project`) on which the user may take
    /// `action`: what `decide` would allow for each, found by the server in one query. Pass the page's `nextCursor` as
    /// `cursor` for the next one; `limit` is 1 to 1000 (the server's default, 100, when nil). Needs a session.
    public func resources(type: String, action: String, cursor: String? = nil, limit: Int? = nil) async throws -> ResourcePage {
        let list = try await withBearer {
            try await self.api.getResources(query: .init(_type: type, action: action, cursor: cursor, limit: limit)).ok.body.json
        }
        return ResourcePage(ids: list.ids, nextCursor: list.nextCursor)
    }

    /// The plan of `action` over every resource of `resourceType` for the session's subject (signed out without a
    /// session): `always`, `never` with the reason, or a condition on the resource for the app's own data.
    public func plan(action: String, resourceType: String) async throws -> ResourcePlanAnswer {
        let plan = try await withBearer(requiringSession: false) {
            try await self.api.postPlan(body: .json(.init(action: action, resourceType: resourceType))).ok.body.json
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ResourcePlanAnswer(
            plan: plan.plan.rawValue, reason: plan.reason, message: plan.message, whereJSON: try plan._where.map { try encoder.encode($0) })
    }

    // MARK: - The account

    /// The signed-in account (`GET /v1/me`).
    public func me() async throws -> AccountProfile {
        let p = try await withBearer { try await self.api.getMe().ok.body.json }
        return AccountProfile(
            userId: p.userId, username: p.username, displayName: p.displayName, email: p.email, isPrivateRelayEmail: p.isPrivateRelayEmail,
            appleUserIds: p.appleUserIds, hasPIN: p.hasPIN, deviceIds: p.deviceIds, appRoles: p.appRoles, tier: p.tier,
            subscriptionExpiresAt: p.subscriptionExpiresAt, appAccountToken: p.appAccountToken)
    }

    /// The privacy settings the policy reads (`PrivacySettings.attributes`).
    public func privacySettings() async throws -> PrivacySettings {
        try Self.settings(try await withBearer { try await self.api.getMePrivacy().ok.body.json })
    }

    /// Changes the privacy settings (fields left nil stay as they are) and returns them as they are now.
    @discardableResult
    public func updatePrivacy(_ change: PrivacyChange) async throws -> PrivacySettings {
        let body = Components.Schemas.PrivacyChange(
            analytics: change.analytics, crashReporting: change.crashReporting, aiSuggestions: change.aiSuggestions,
            dataSharing: change.dataSharing.flatMap { .init(rawValue: $0.rawValue) })
        return try Self.settings(try await withBearer { try await self.api.putMePrivacy(body: .json(body)).ok.body.json })
    }

    /// The server's settings as the type policies read; a `dataSharing` this client does not know is an error, not `none`.
    private static func settings(_ p: Components.Schemas.Privacy) throws -> PrivacySettings {
        guard let sharing = DataSharing(rawValue: p.dataSharing.rawValue) else {
            throw GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "an unknown dataSharing value", field: "dataSharing")
        }
        return PrivacySettings(analytics: p.analytics, crashReporting: p.crashReporting, aiSuggestions: p.aiSuggestions, dataSharing: sharing)
    }

    /// Everything the server holds on the account, as JSON (GDPR export). Needs a recent verification.
    public func exportData() async throws -> Data {
        let export = try await withBearer { try await self.api.getMeExport().ok.body.json }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(export)
    }

    /// Deletes the account and everything held on it, then forgets the session. Needs a recent verification.
    public func deleteAccount() async throws {
        _ = try await withBearer { try await self.api.deleteMe().noContent }
        forget(ended: false)
    }

    /// Applies a StoreKit 2 purchase: pass `VerificationResult<Transaction>.jwsRepresentation`. The server verifies
    /// Apple's signature and maps the product to a tier; a product id the app names proves nothing.
    @discardableResult
    public func recordPurchase(signedTransaction: String) async throws -> PurchaseResult {
        let r = try await withBearer { try await self.api.postMePurchases(body: .json(.init(signedTransaction: signedTransaction))).ok.body.json }
        return PurchaseResult(outcome: r.outcome.rawValue, tier: r.tier, expiresAt: r.expiresAt)
    }

    // MARK: - Shared spaces

    /// A new shared space owned by the user, and the code a partner joins it with.
    public func createSpace(name: String, type: String? = nil, inviteRole: String? = nil) async throws -> Space {
        let s = try await withBearer {
            try await self.api.postSpaces(body: .json(.init(name: name, _type: type, inviteRole: inviteRole))).created.body.json
        }
        return Space(resourceId: s.resourceId, shareCode: s.shareCode)
    }

    /// A new share code for a space the user may invite to, granting `role`.
    public func newShareCode(spaceId: String, role: String? = nil) async throws -> String {
        try await withBearer {
            try await self.api.postSpacesByIdCodes(path: .init(id: spaceId), body: .json(.init(role: role))).created.body.json.shareCode
        }
    }

    /// Joins the space a share code names; returns its resource id.
    @discardableResult
    public func joinSpace(shareCode: String) async throws -> String {
        try await withBearer { try await self.api.postSpacesJoin(body: .json(.init(shareCode: shareCode))).ok.body.json.resourceId }
    }
}

/// A resource and context in the generated layer's types, read from the contract's JSON of a request (one writer:
/// `Request.json`), and a request as a free-form JSON value for the batch body.
struct ContractParts {
    var resource: Components.Schemas.Resource
    var context: Components.Schemas.Context?

    init(resource: Resource, context: Context) throws {
        struct Parts: Decodable {
            var resource: Components.Schemas.Resource
            var context: Components.Schemas.Context?
        }
        let data = try JSONEncoder().encode(Request(action: "-", resource: resource, context: context))
        let parts = try JSONDecoder().decode(Parts.self, from: data)
        self.resource = parts.resource
        self.context = parts.context
    }

    static func value(of request: Request) throws -> OpenAPIValueContainer {
        try JSONDecoder().decode(OpenAPIValueContainer.self, from: JSONEncoder().encode(request))
    }
}
