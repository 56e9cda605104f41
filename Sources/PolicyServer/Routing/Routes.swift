/// Every route the server answers, by group, and the controller method that answers it: the one list of routes
/// (`docs/openapi.yaml` lists the same ones; OpenAPIRouteTests compares them). `on` registers a route; `write` one
/// under the write quotas (`WriteQuota`); `decision` one that decides by the policy serving now.
func addRoutes(to routes: RouteBuilder) {
    let server = routes.server
    let health = HealthController(server: server)
    let policy = PolicyController(server: server)
    let decisions = DecisionController(server: server)
    let operators = OperatorController(server: server)
    let lists = ListController(server: server)
    let console = ConsoleController(server: server)
    let consolePages = ConsolePages(enabled: server.settings.console)

    // Operations: liveness, readiness, metrics, the policy version, the playground.
    routes.on(.get, "/healthz", health.healthz)
    routes.on(.get, "/readyz", health.readyz)
    routes.on(.get, "/metrics", health.metrics)
    routes.on(.get, "/v1/bundle/events", policy.bundleEvents)
    routes.on(.get, "/playground", policy.playground)

    // Decisions.
    routes.decision("/v1/decide", metric: "decide", decisions.decide)
    routes.decision("/v1/decide/batch", metric: "batch", decisions.batch)
    routes.decision("/v1/explain", metric: "explain", decisions.explain)
    routes.decision("/v1/check", metric: "check", decisions.check)

    // The inverse questions: a plan over every resource of a type, and the store's list of the bearer's resources.
    routes.on(.post, "/v1/plan", lists.plan)
    routes.on(.get, "/v1/resources", lists.resources)

    // The operator's routes (the operator credential).
    routes.on(.post, "/v1/operator/apple-credential-state", operators.appleCredentialState)
    routes.on(.put, "/v1/operator/users/{id}/roles", operators.setRoles)
    routes.on(.put, "/v1/operator/users/{id}/subscription", operators.setSubscription)
    routes.on(.post, "/v1/operator/users/{id}/legacy-pin", operators.importLegacyPIN)
    routes.on(.post, "/v1/operator/users/{id}/usage", operators.userUsage)
    routes.on(.post, "/v1/operator/resources/{id}/usage", operators.resourceUsage)
    // Generated from docs/openapi.yaml (GeneratedRoutes, scripts/openapi-generator/openapi-server-config.yaml lists
    // them): the routes of this list with no request body, no required query parameter and an answer of today's bytes
    // (docs/architecture.md "Generated routes"): GET /v1/policy and /v1/bundle; the anonymous sign-in, sign-out, sign-out
    // everywhere, the Apple nonce and DELETE /v1/auth/apple/link; GET /v1/me, /v1/me/privacy, /v1/me/export and
    // DELETE /v1/me; POST /v1/spaces/{id}/codes; the operator's pin-unlock, user deletion and log reads (decisions,
    // audit, shadow); the console's user, policy, explain-again, sign-out everywhere, session and subscription ends.
    routes.generated(GeneratedRoutes(server: server))

    // The operator console's routes (the operator credential); `--console` also serves its page at /console.
    // `GET /v1/operator/users` stays hand-written: its `q` is required, and the generated decoder, which never sees the
    // query (`RouteRequest.pathOnly`), would refuse every request for the lack of it.
    routes.on(.get, "/v1/operator/users", console.findUsers)
    routes.on(.post, "/v1/operator/users/{id}/explain", console.explain)
    routes.on(.get, "/console", consolePages.index)
    routes.on(.get, "/console/console.js", consolePages.script)
    routes.on(.get, "/console/console.css", consolePages.style)
}
