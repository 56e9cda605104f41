import ArgumentParser
import Foundation
import PolicyModel

/// `policy version`: the release, the git commit it was built from and when, as text or JSON.
struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the Gatehouse version, the git commit it was built from and the build date.",
        discussion: "`policy --version` prints the version alone.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    @Option(help: "text or json") var format: Format = .text

    func run() throws {
        let info = BuildInfo.current
        switch format {
        case .text: print("policy \(info.version) (commit \(info.commit), built \(info.date))")
        case .json: print(info.json)
        }
    }
}

/// What `policy version` reports; the version comes from `GatehouseVersion`, the rest from the build stamp.
struct BuildInfo: Sendable, Equatable {
    var version: String
    var commit: String
    var date: String

    static let current = BuildInfo(version: GatehouseVersion.current, commit: BuildStamp.commit, date: BuildStamp.date)

    var json: String {
        JSONText.object([.init("version", .string(version)), .init("commit", .string(commit)), .init("buildDate", .string(date))])
            .rendered()
    }
}
