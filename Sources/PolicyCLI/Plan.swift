import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Which resources of a type a subject may take an action on: always, never, or a condition on the resource.",
        discussion: """
            The subject, action and context come from the same flags as explain (--subject-tier pro, --auth-method \
            pin, and so on; the resource type is inferred from --action when one type has it); a flag about one \
            resource (--resource-id, --owner, --member-role, --usage, --resource-attribute) is refused: the plan \
            covers every resource of the type:

              policy plan --policies policies/research-crawler --action edit
              policy plan --policies policies/contacasal --action edit_expense

            Text prints the plan in words; --format json prints the contract's plan object (docs/decision-contract.md).

            Exit codes: 0 planned; 1 the set does not load; 64 usage error (a bad flag or name).
            """)

    @Option(help: "The policy set folder.")
    var policies: String

    @Option(help: "Output format: text, or json (the contract's plan object).")
    var format: ExplainFormat = .text

    @OptionGroup(title: "Subject, action and context from flags")
    var flags: RequestFlagOptions

    func run() throws {
        let result = PolicyCompiler.load(directory: policies)
        let policy = try loadedOrExit(result)
        let request: Request
        do throws(RequestFlagError) {
            if let refused = flags.requestFlags.resourceFlagForPlan { throw refused }
            request = try flags.requestFlags.request(for: result)
        } catch {
            writeError((["error: \(error.flag): \(error.message)"] + error.help.map { "   = help: \($0)" }).joined(separator: "\n"))
            throw ExitCode(64)
        }
        let plan = policy.plan(subject: request.subject, action: request.action, resourceType: request.resource.type, context: request.context)
        switch format {
        case .json:
            print(plan.json.rendered(pretty: true))
        case .text:
            print("request: " + request.json.rendered())
            print("\(request.resource.type).\(request.action): \(plan.text)")
        }
    }
}
