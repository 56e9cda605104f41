import Foundation
import GatehouseTestSupport
import PolicyCompiler
import PolicyEngine
import PolicyModel
import Testing

/// `CompiledPolicy.plan` against `decide`: for every request, the plan for its subject, action and resource type,
/// evaluated on its resource, allows exactly when `decide` allows. Shipped sets and generated sets, seeded;
/// 10^5 cases by default, 10^6 with `GATEHOUSE_LONG_TESTS=1` (TestScale). Each plan is also exactly the plan
/// built the first way (`referencePlan`: the whole expression, then simplified), so `plan`'s shortcuts change no byte.
@Suite(.computeBound) struct PlanDifferentialTests {
    struct Run {
        var compared = 0
        var plans: [String: Int] = [:]
        var failures: [String] = []

        mutating func compare(_ request: Request, policy: CompiledPolicy, context: @autoclosure () -> String) {
            let plan = policy.plan(subject: request.subject, action: request.action, resourceType: request.resource.type, context: request.context)
            let planned = policy.allows(plan, on: request.resource, subject: request.subject, context: request.context)
            let decided = policy.decide(request).effect == .allow
            compared += 1
            switch plan {
            case .always: plans["always", default: 0] += 1
            case .never: plans["never", default: 0] += 1
            case .conditional: plans["conditional", default: 0] += 1
            }
            if planned != decided, failures.count < 3 {
                failures.append("\(context()): plan says \(planned), decide says \(decided)\nplan: \(plan.json.rendered(pretty: false))\nrequest: \(request.json.rendered(pretty: false))")
            }
            let reference = policy.referencePlan(
                subject: request.subject, action: request.action, resourceType: request.resource.type, context: request.context)
            if plan != reference, failures.count < 3 {
                failures.append("\(context()): plan \(plan.text) is not the reference plan \(reference.text)\nrequest: \(request.json.rendered(pretty: false))")
            }
        }
    }

    @Test(arguments: ["research-crawler", "mimisupply", "contacasal"])
    func shippedSetPlansAgreeWithDecide(_ set: String) throws {
        let files = try PolicySetDifferentialTests.shippedFiles(set)
        let policy = try #require(PolicyCompiler.compile(name: set, files: files).policy)
        let model = PolicySetReader.read(files)
        let seed = TestScale.seed(20_261_125)
        var requests = RequestGenerator(rng: Rng(state: seed), model: model)
        var run = Run()
        for index in 0..<TestScale.count(20_000) {
            run.compare(requests.make(), policy: policy, context: "policies/\(set), seed \(seed), request #\(index)")
            if !run.failures.isEmpty { break }
        }
        #expect(run.failures.isEmpty, "\(run.failures.joined(separator: "\n\n"))")
        // Agreeing proves little unless the plans take every form.
        for form in ["always", "never", "conditional"] where set != "mimisupply" || form != "conditional" {
            #expect(run.plans[form, default: 0] >= 50, "\(form) plans: \(run.plans[form, default: 0])")
        }
    }

    @Test func generatedSetPlansAgreeWithDecide() throws {
        let base = TestScale.seed(7_000_001)
        let seeds = (0..<UInt64(TestScale.count(150))).map { base &+ $0 &* 0x9E37_79B9 }
        var run = Run()
        for seed in seeds {
            var generator = PolicySetGenerator(rng: Rng(state: seed))
            let model = generator.make()
            var renderer = PolicySetRenderer(rng: Rng(state: seed ^ 0xA5A5))
            let files = renderer.files(model, layout: seed % 3 == 0 ? .single : .split)
            guard let policy = PolicyCompiler.compile(name: "generated", files: files).policy else { continue }
            var requests = RequestGenerator(rng: Rng(state: seed &+ 2), model: model)
            for index in 0..<300 {
                run.compare(requests.make(), policy: policy, context: "GATEHOUSE_POLICY_SEED=\(seed), request #\(index)")
            }
            if !run.failures.isEmpty { break }
        }
        #expect(run.failures.isEmpty, "\(run.failures.joined(separator: "\n\n"))")
        #expect(run.compared >= 45_000 || !run.failures.isEmpty)
        for form in ["always", "never", "conditional"] { #expect(run.plans[form, default: 0] >= 50, "\(form) plans: \(run.plans[form, default: 0])") }
        print("plans compared with decide: \(run.compared) \(run.plans.sorted { $0.key < $1.key })")
    }
}
