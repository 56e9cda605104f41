import Gatehouse
import Hummingbird
import NIOCore
import PolicyEngine
import PolicyModel

/// The decision routes: one request, a batch, an explanation, a one-subject check. Each gets the body's bytes and the
/// policy serving now (`RouteBuilder.decision`: one version for the whole body, named in `Gatehouse-Policy`) and hands
/// the request to the facade's pipeline (`GatehouseService.decide`), which resolves, decides, counts and records. A
/// bearer the pipeline refused gets the answer's `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1): the
/// decisions are a signed-out subject's, and the header tells a client to refresh rather than believe them.
struct DecisionController {
    let server: GatehouseServer
    let headers = DecisionHeaders()
    var service: GatehouseService { server.service }
    var limit: Int { server.settings.bodyLimit }

    @Sendable func decide(_ body: ByteBuffer, _ bearer: String?, _ policy: CompiledPolicy, _ origin: DecisionOrigin?) async throws -> Response {
        let report = BearerReport.forRequest(bearer)
        let decision = try await service.decide(
            try DecisionBodies.request(body, limit: limit), bearer: bearer, by: policy, report: report, origin: origin)
        return jsonBytes(decision.jsonBytes, headers.fields(for: policy, report))
    }

    @Sendable func batch(_ body: ByteBuffer, _ bearer: String?, _ policy: CompiledPolicy, _ origin: DecisionOrigin?) async throws -> Response {
        let report = BearerReport.forRequest(bearer)
        let answers = try await service.decideBatch(
            try DecisionBodies.batch(body.readableBytesView, limit: limit), bearer: bearer, by: policy, report: report, origin: origin)
        return jsonBytes(DecisionBodies.batchAnswer(answers), headers.fields(for: policy, report))
    }

    @Sendable func explain(_ body: ByteBuffer, _ bearer: String?, _ policy: CompiledPolicy, _ origin: DecisionOrigin?) async throws -> Response {
        let report = BearerReport.forRequest(bearer)
        let explanation = try await service.explain(
            try DecisionBodies.request(body, limit: limit), bearer: bearer, by: policy, report: report)
        return json(explanation.json, policy: policy.contentHash).refusingBearer(report)
    }

    @Sendable func check(_ body: ByteBuffer, _ bearer: String?, _ policy: CompiledPolicy, _ origin: DecisionOrigin?) async throws -> Response {
        let report = BearerReport.forRequest(bearer)
        let answers = try await service.check(
            try DecisionBodies.check(body.readableBytesView, limit: limit), bearer: bearer, by: policy, report: report, origin: origin)
        return jsonBytes(DecisionBodies.checkAnswer(answers), headers.fields(for: policy, report))
    }
}
