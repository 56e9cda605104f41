import ArgumentParser
import Foundation
import PolicyCompiler
import PolicyEngine
import PolicyModel
import PolicyVerification

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide one request and print the trace of every check and rule considered, with file:line:col.",
        discussion: """
            The request comes from --request FILE (or - for standard input), from standard input when no request \
            flag is given, or from flags:

              policy explain --policies policies/mimisupply --action checkout
              policy explain --policies policies/research-crawler --action view
              policy explain --policies policies/contacasal --action edit_expense

            Flags describe the rest: --subject-tier free, --owner alice --member-role viewer, --auth-method pin \
            --verified-ago 10m, and so on (below).

            From flags, the subject is signed in as 'user' unless --subject-id or --signed-out says otherwise; the \
            resource type is inferred from --action when one type has it; names are checked against the set (with a \
            did-you-mean) and attribute values are typed by its `attributes:` declarations. The request used is \
            printed, with context.now set, so it can be replayed.

            Exit codes: 0 decided (allow or deny); 1 the set does not load; 64 usage error (a bad flag or name); \
            65 the request JSON is invalid.
            """)

    @Option(help: "The policy set folder.")
    var policies: String

    @Option(help: ArgumentHelp("A file holding one request JSON; - for standard input.", valueName: "FILE"))
    var request: String?

    @Option(help: "Output format: text, or json (the contract's decision plus a trace array).")
    var format: ExplainFormat = .text

    @OptionGroup(title: "Request from flags")
    var flags: RequestFlagOptions

    func validate() throws {
        if request != nil, !flags.requestFlags.isEmpty {
            throw ValidationError("--request cannot be combined with flags that build a request (--action, --subject-tier, ...)")
        }
    }

    func run() throws {
        let result = PolicyCompiler.load(directory: policies)
        let policy = try loadedOrExit(result)
        let parsed: Request
        if !flags.requestFlags.isEmpty {
            do {
                parsed = try flags.requestFlags.request(for: result)
            } catch {
                // A bad flag value is a usage error: say which flag and what would be right.
                writeError((["error: \(error.flag): \(error.message)"] + error.help.map { "   = help: \($0)" }).joined(separator: "\n"))
                throw ExitCode(64)
            }
        } else {
            let data: Data
            if let path = request, path != "-" {
                guard let d = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read '\(path)'") }
                data = d
            } else {
                data = FileHandle.standardInput.readDataToEndOfFile()
            }
            do {
                parsed = try Request(json: data)
            } catch {
                writeError("error: invalid request: \(error.description)")
                throw ExitCode(65)
            }
        }
        let explanation = policy.explain(parsed)
        switch format {
        case .json:
            print(explanation.json.rendered(pretty: true))
        case .text:
            print((["request: " + parsed.json.rendered()] + ExplanationText.lines(explanation)).joined(separator: "\n"))
        }
    }
}

enum ExplainFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// The flags that describe a request field by field; see `RequestFlags`.
struct RequestFlagOptions: ParsableArguments {
    @Option(help: "The subject's id (default: user).")
    var subjectId: String?
    @Flag(help: "The subject is signed out (no id).")
    var signedOut = false
    @Option(help: "The subject's subscription tier.")
    var subjectTier: String?
    @Option(help: ArgumentHelp("When the subscription lapses (RFC 3339).", valueName: "TIME"))
    var subscriptionExpiry: String?
    @Flag(help: "The subscription lapsed a day before now.")
    var expired = false
    @Option(help: ArgumentHelp("An app role the subject holds (repeatable).", valueName: "ROLE"))
    var appRole: [String] = []
    @Option(help: ArgumentHelp("How the subject was verified: \(AuthMethod.all.joined(separator: ", ")).", valueName: "METHOD"))
    var authMethod: String?
    @Option(help: ArgumentHelp("Verified that long before now, e.g. 5m or 1h30m (needs --auth-method).", valueName: "DURATION"))
    var verifiedAgo: String?
    @Option(help: ArgumentHelp("Verified at this time (RFC 3339; needs --auth-method).", valueName: "TIME"))
    var verifiedAt: String?
    @Option(help: ArgumentHelp("A subject attribute, typed by the set's declaration (repeatable).", valueName: "NAME=VALUE"))
    var subjectAttribute: [String] = []
    @Option(help: "The action.")
    var action: String?
    @Option(help: "The resource type (default: the one type that has --action).")
    var resourceType: String?
    @Option(help: "The resource's id.")
    var resourceId: String?
    @Option(help: ArgumentHelp("The resource's owner: self (the subject) or a user id.", valueName: "self|ID"))
    var owner: String?
    @Option(help: ArgumentHelp("The subject's role on the resource, as a member.", valueName: "ROLE"))
    var memberRole: String?
    @Option(help: ArgumentHelp("A usage counter of the resource (repeatable).", valueName: "COUNTER=N"))
    var usage: [String] = []
    @Option(help: ArgumentHelp("A resource attribute (repeatable).", valueName: "NAME=VALUE"))
    var resourceAttribute: [String] = []
    @Option(help: ArgumentHelp("A context attribute (repeatable).", valueName: "NAME=VALUE"))
    var contextAttribute: [String] = []
    @Option(help: ArgumentHelp("The instant to decide at (RFC 3339; default: the clock).", valueName: "TIME"))
    var now: String?

    var requestFlags: RequestFlags {
        var f = RequestFlags()
        f.subjectID = subjectId
        f.signedOut = signedOut
        f.tier = subjectTier
        f.subscriptionExpiry = subscriptionExpiry
        f.expired = expired
        f.appRoles = appRole
        f.authMethod = authMethod
        f.verifiedAgo = verifiedAgo
        f.verifiedAt = verifiedAt
        f.subjectAttributes = subjectAttribute
        f.action = action
        f.resourceType = resourceType
        f.resourceID = resourceId
        f.owner = owner
        f.memberRole = memberRole
        f.usage = usage
        f.resourceAttributes = resourceAttribute
        f.contextAttributes = contextAttribute
        f.now = now
        return f
    }
}
