import ArgumentParser
import Foundation
import PolicyEngine
import PolicyVerification

struct Matrix: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the decision table of a policy set: subject classes by actions, per resource type.",
        discussion: """
            Rows are the subject classes the request space distinguishes (signed out, anonymous, each tier, a lapsed \
            subscription, each standing, app-role set and auth method or freshness that matters); rows that decide \
            alike in every column are one row. Columns are actions, split where a usage counter, attribute or time \
            changes the decision ("usage.sources ≥ 50"). A cell is allow or the deny reason code; every cell is \
            `decide` on one request of the space.

            Formats (--format):
              text      aligned columns, row letters with a legend, deny messages
                        numbered below
              markdown  GitHub-flavoured tables, deny messages as footnotes
              html      one self-contained page: colour and symbol per cell,
                        sticky headers, filters, request JSON per cell
              json      every row, column and cell, each cell with its request
                        and decision (replay with policy decide)

            Exit codes: 0 printed; 1 the set does not load; 64 usage error (an unknown --resource).
            """)

    @Argument(help: "The policy set folder, or a bundle file (policy bundle build; unverified unless --public-key is given).")
    var directory: String

    @Option(help: ArgumentHelp("Only this resource type.", valueName: "TYPE"))
    var resource: String?

    @Option(help: "Output format: text, markdown, html or json.")
    var format: MatrixFormat = .text

    @OptionGroup var bundleKey: BundleKeyOption

    func run() throws {
        var title = URL(fileURLWithPath: directory).standardizedFileURL.lastPathComponent
        let policy: CompiledPolicy
        if isBundleFile(directory) {
            // Locations name the bundle's files by their paths in it, as the server names them.
            policy = try loadedOrExit(try openBundle(directory, publicKey: bundleKey.publicKey).compile())
            title = policy.name
        } else {
            policy = try loadOrExit(directory)
        }
        if let resource, !policy.resourceTypeNames.contains(resource) {
            throw ValidationError("unknown resource type '\(resource)'; the set has \(policy.resourceTypeNames.joined(separator: ", "))")
        }
        let matrix = DecisionMatrix(policy: policy, resourceType: resource)
        print(MatrixRenderer.render(matrix, title: title, as: format), terminator: format == .html ? "" : "\n")
    }
}

extension MatrixFormat: ExpressibleByArgument {}
