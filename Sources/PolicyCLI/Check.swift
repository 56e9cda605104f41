import ArgumentParser
import Foundation
import PolicyVerification

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load and validate policy sets, lint them, run their tests and prove their invariants.",
        discussion: """
            Each DIR is a policy set (a folder holding .yaml files), a folder of policy sets, or a policy bundle \
            file (policy bundle build): unpacked into a new temporary folder of a fixed name (removed afterwards), its \
            hashes checked; with --public-key its signature is verified first, otherwise the output says "unverified \
            bundle".

            Formats (--format):
              text      diagnostics with the source line and a caret, failures, a
                        summary per set
              json      one document: {"ok", "sets": [{path, ok, contentHash,
                        diagnostics, tests, invariants, coverage}]}
              github    GitHub Actions annotations (::error file=...,line=...::)
              junit     JUnit XML: one <testsuite> per set
              markdown  a table of sets, then each finding (for
                        $GITHUB_STEP_SUMMARY or a pull-request comment)

            Exit codes:
              0   clean
              1   policy errors: a set does not load, or (with --strict) has warnings
              2   a policy test fails, an invariant does not hold, or coverage is below
                  --min-coverage
              64  usage error (unknown flag or format, a DIR that is not a folder)

            Lints (warnings; --strict makes them errors): \((PolicyLinter.rules.map(\.code) + InvariantProver.lintCodes.map(\.code)).joined(separator: ", ")).

            Coverage counts each rule deciding, each condition being true and false, and each action requirement \
            (sign-in, auth, app role, membership, feature, limit, consent) passing and failing, over the policy \
            tests. See docs/cli.md.
            """)

    @Argument(help: "Policy set folders, folders holding policy sets, or bundle files.")
    var directories: [String] = ["policies"]

    @Option(help: "Output format: text, json, github, junit or markdown.")
    var format: CheckFormat = .text

    @Flag(help: "Treat warnings (lints, invariant warnings) as errors: exit 1.")
    var strict = false

    @Flag(help: "Report which rules, condition branches and requirement outcomes the policy tests exercise, per file.")
    var coverage = false

    @Option(help: ArgumentHelp("Exit 2 when a set's test coverage is below N percent (0-100); implies --coverage.", valueName: "N"))
    var minCoverage: Double?

    @Option(help: ArgumentHelp("Also write the JUnit XML report to FILE, whatever --format is.", valueName: "FILE"))
    var junitOutput: String?

    @OptionGroup var bundleKey: BundleKeyOption

    func validate() throws {
        if let minCoverage, !(0...100).contains(minCoverage) {
            throw ValidationError("--min-coverage must be between 0 and 100, not \(minCoverage)")
        }
        for directory in directories {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
                throw ValidationError("'\(directory)' is not a folder or a bundle file")
            }
        }
    }

    func run() throws {
        // A bundle is checked as the folder it unpacks to; its output names the bundle file instead of that folder.
        var unpacked: [(folder: String, cleanup: URL, file: String)] = []
        defer { for u in unpacked { try? FileManager.default.removeItem(at: u.cleanup) } }
        var folders: [String] = []
        for directory in directories {
            if isBundleFile(directory) {
                let u = try unpackBundle(directory, publicKey: bundleKey.publicKey)
                unpacked.append((u.folder, u.cleanup, directory))
                folders.append(u.folder)
            } else {
                folders.append(directory)
            }
        }
        let report = CheckRunner.check(
            directories: folders, options: CheckOptions(strict: strict, coverage: coverage, minCoverage: minCoverage))
        func named(_ text: String) -> String { unpacked.reduce(text) { $0.replacingOccurrences(of: $1.folder, with: $1.file) } }
        print(named(report.rendered(as: format)), terminator: format == .junit ? "" : "\n")
        if let junitOutput {
            do {
                try named(report.rendered(as: .junit)).write(toFile: junitOutput, atomically: true, encoding: .utf8)
            } catch {
                writeError("error: cannot write '\(junitOutput)': \(error.localizedDescription)")
                throw ExitCode(73)  // EX_CANTCREAT
            }
        }
        if report.outcome != .clean { throw ExitCode(report.outcome.rawValue) }
    }
}

extension CheckFormat: ExpressibleByArgument {}
