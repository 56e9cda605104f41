import Foundation
import PolicyModel

/// `policy replay`'s output: text for a terminal, JSON for a program, markdown for the pull-request comment beside
/// `policy diff --format markdown`.
public enum ReplayRenderer {
    /// `n` of `total` as a percentage with one decimal.
    static func share(_ n: Int, of total: Int) -> String {
        guard total > 0 else { return "0%" }
        return String(format: "%.1f%%", Double(n) * 100 / Double(total))
    }

    static func short(_ hash: String?) -> String { hash.map { String($0.prefix(12)) } ?? "recorded" }

    /// One line per flip group, with a summary and the unreadable records.
    public static func text(_ r: ReplayReport, candidate: String, base: String?) -> String {
        var out: [String] = []
        out.append(
            "replayed \(r.replayed) of \(r.records) records under \(candidate) (\(short(r.candidateHash))) against \(base.map { "\($0) (\(short(r.baseHash)))" } ?? "the recorded outcomes")")
        if r.otherVersion > 0 { out.append("\(r.otherVersion) records were decided by another version than the base; replayed anyway") }
        if r.totalFlips == 0 {
            out.append("no decision changes")
        } else {
            out.append(
                "\(r.totalFlips) decisions change (\(share(r.totalFlips, of: r.replayed))): \(r.flips(.allowToDeny)) allow -> deny, \(r.flips(.denyToAllow)) deny -> allow, \(r.flips(.reasonChanged)) reason changed"
            )
            for g in r.groups {
                out.append(
                    "  \(g.action): \(g.direction.rawValue) (\(g.from.rawValue) -> \(g.to.rawValue)) for \(g.shape): \(g.count) (\(share(g.count, of: r.replayed))); e.g. \(g.examples.joined(separator: ", "))"
                )
            }
        }
        if r.unreadableCount > 0 {
            out.append("\(r.unreadableCount) records could not be replayed:")
            for u in r.unreadable { out.append("  \(r.source):\(u.line): \(u.message)") }
            if r.unreadableCount > r.unreadable.count { out.append("  ... and \(r.unreadableCount - r.unreadable.count) more") }
        }
        return out.joined(separator: "\n")
    }

    /// The report as one JSON object.
    public static func json(_ r: ReplayReport, candidate: String, base: String?) -> JSONText {
        let fields: [JSONText.Field] = [
            .init("candidate", .object([.init("name", .string(candidate)), .init("hash", .string(r.candidateHash))])),
            .init(
                "base",
                base.map { .object([.init("name", .string($0)), .init("hash", r.baseHash.map(JSONText.string) ?? .null)]) } ?? .string("recorded")),
            .init("records", .int(r.records)), .init("replayed", .int(r.replayed)), .init("otherVersion", .int(r.otherVersion)),
            .init(
                "flips",
                .object([
                    .init("total", .int(r.totalFlips)), .init("allowToDeny", .int(r.flips(.allowToDeny))), .init("denyToAllow", .int(r.flips(.denyToAllow))),
                    .init("reasonChanged", .int(r.flips(.reasonChanged))),
                ])),
            .init(
                "groups",
                .array(
                    r.groups.map { g in
                        .object([
                            .init("action", .string(g.action)), .init("direction", .string(g.direction.rawValue)), .init("from", .string(g.from.rawValue)),
                            .init("to", .string(g.to.rawValue)), .init("subject", .string(g.shape)), .init("count", .int(g.count)),
                            .init("share", .double(r.replayed > 0 ? Double(g.count) / Double(r.replayed) : 0)),
                            .init("examples", .array(g.examples.map(JSONText.string))),
                        ])
                    })),
            .init("policyVersions", .object(r.policyVersions.keys.sorted().map { .init($0, .int(r.policyVersions[$0]!)) })),
            .init("unreadableCount", .int(r.unreadableCount)),
            .init("unreadable", .array(r.unreadable.map { .object([.init("line", .int($0.line)), .init("message", .string($0.message))]) })),
        ]
        return .object(fields)
    }

    /// The pull-request comment: a summary line and a table of the groups.
    public static func markdown(_ r: ReplayReport, candidate: String, base: String?) -> String {
        var out: [String] = ["### Replay of recorded decisions", ""]
        out.append(
            "Replayed **\(r.replayed)** of \(r.records) recorded decisions under `\(candidate)` against \(base.map { "`\($0)`" } ?? "the recorded outcomes").")
        out.append("")
        if r.totalFlips == 0 {
            out.append("No recorded decision changes.")
        } else {
            out.append(
                "**\(r.totalFlips)** decisions change (\(share(r.totalFlips, of: r.replayed))): \(r.flips(.allowToDeny)) allow → deny, \(r.flips(.denyToAllow)) deny → allow, \(r.flips(.reasonChanged)) reason changed."
            )
            out.append("")
            out.append("| action | change | subject | count | share | examples |")
            out.append("| --- | --- | --- | ---: | ---: | --- |")
            for g in r.groups {
                let change = "\(g.direction.rawValue) (`\(g.from.rawValue)` → `\(g.to.rawValue)`)"
                out.append("| `\(g.action)` | \(change) | \(g.shape) | \(g.count) | \(share(g.count, of: r.replayed)) | \(g.examples.map { "`\($0)`" }.joined(separator: ", ")) |")
            }
        }
        if r.otherVersion > 0 {
            out.append("")
            out.append("\(r.otherVersion) records were decided by another policy version than the base; replayed anyway.")
        }
        if r.unreadableCount > 0 {
            out.append("")
            out.append("\(r.unreadableCount) records could not be replayed (first: `\(r.source):\(r.unreadable[0].line)`: \(r.unreadable[0].message)).")
        }
        return out.joined(separator: "\n")
    }
}
