/// Every route the server answers, by group, and the controller method that answers it: the one list of routes
/// (`docs/openapi.yaml` lists the same ones; OpenAPIRouteTests compares them). `on` registers a route; `write` one
/// under the write quotas (`WriteQuota`); `decision` one that decides by the policy serving now.
func addRoutes(to routes: RouteBuilder) {
    let server = routes.server
    let health = HealthController(server: server)
    let policy = PolicyController(server: server)
    let decisions = DecisionController(server: server)
    let lists = ListController(server: server)
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

    // Generated from docs/openapi.yaml (GeneratedRoutes, scripts/openapi-generator/openapi-server-config.yaml lists
    // them): the routes of this list with no request body, no required query parameter and an answer of today's bytes
    // (docs/architecture.md "Generated routes"): GET /v1/policy and /v1/bundle; the anonymous sign-in, sign-out, sign-out
    // everywhere, the Apple nonce and DELETE /v1/auth/apple/link; GET /v1/me, /v1/me/privacy, /v1/me/export and
    // DELETE /v1/me; POST /v1/spaces/{id}/codes; the operator's pin-unlock, user deletion and log reads (decisions,
    // audit, shadow); the console's user, policy, explain-again, sign-out everywhere, session and subscription ends.
    routes.generated(GeneratedRoutes(server: server))

    // The operator console's page, script and style (`--console`); its routes are generated.
    routes.on(.get, "/console", consolePages.index)
    routes.on(.get, "/console/console.js", consolePages.script)
    routes.on(.get, "/console/console.css", consolePages.style)
}
