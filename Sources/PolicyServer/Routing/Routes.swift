/// Every route the server answers, by group, and the controller method that answers it: the one list of routes
/// (`docs/openapi.yaml` lists the same ones; OpenAPIRouteTests compares them). `on` registers a route; `write` one
/// under the write quotas (`WriteQuota`); `decision` one that decides by the policy serving now.
func addRoutes(to routes: RouteBuilder) {
    let server = routes.server
    let health = HealthController(server: server)
    let policy = PolicyController(server: server)
    let decisions = DecisionController(server: server)
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

    // Every other route is generated from docs/openapi.yaml (GeneratedRoutes; scripts/openapi-generator/
    // openapi-server-config.yaml lists them): sign-in, sessions, credentials, the account, purchases, spaces, the
    // policy and bundle reads, plans and resource lists, the operator's and the console's routes. Each handler calls
    // its controller's method (docs/architecture.md "Generated routes" says why the routes above are not generated).
    routes.generated(GeneratedRoutes(server: server))

    // The operator console's page, script and style (`--console`); its routes are generated.
    routes.on(.get, "/console", consolePages.index)
    routes.on(.get, "/console/console.js", consolePages.script)
    routes.on(.get, "/console/console.css", consolePages.style)
}
