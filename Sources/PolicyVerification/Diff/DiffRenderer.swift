import Foundation
import PolicyModel

/// Renders a `DecisionDiff` for people (grouped sentences) and for tools (JSON).
public enum DiffRenderer {
    public static func text(_ diff: DecisionDiff, old: String, new: String) -> String {
        var lines: [String] = []
        let groups = diff.changes.count
        if diff.changed == 0 {
            lines.append("\(old) -> \(new): no decision changes over \(diff.requests) requests")
        } else {
            lines.append(
                "\(old) -> \(new): \(diff.changed) of \(diff.requests) requests change decision in \(groups) group\(groups == 1 ? "" : "s")"
                    + (diff.widening > 0 ? ", \(diff.widening) widening (deny -> allow)" : ", none widening"))
        }
        for change in diff.changes {
            let mark = change.isWidening ? "+ WIDENING" : change.to.effect == .deny && change.from.effect == .allow ? "- narrowing" : "~ changed"
            lines.append("  \(mark): \(change.summary): \(change.from) -> \(change.to) [\(change.requests) of \(change.ofRequests) requests]")
            lines.append("      e.g. \(change.example.json.rendered(pretty: false))")
        }
        for d in diff.diagnostics { lines.append("warning: \(d.message) [\(d.code)]") }
        return lines.joined(separator: "\n")
    }

    /// For a pull-request comment: the changed cells (who, action, old -> new with reasons) as a table,
    /// then the grouped summary with an example request per group.
    public static func markdown(_ diff: DecisionDiff, old: String, new: String) -> String {
        let cell = MatrixRenderer.markdownCell
        func outcome(_ o: Outcome) -> String { o.effect == .allow ? "✅ allow" : "⛔ deny (\(o.reason.rawValue))" }
        var lines = ["## Policy diff: \(cell(old)) → \(cell(new))", ""]
        guard diff.changed > 0 else {
            lines.append("No decision changes over \(diff.requests) requests.")
            lines += diff.diagnostics.map { "\n> **warning:** \(cell($0.message)) `[\($0.code)]`" }
            return lines.joined(separator: "\n")
        }
        let groups = diff.changes.count
        lines.append(
            "**\(diff.changed) of \(diff.requests) requests change decision in \(groups) group\(groups == 1 ? "" : "s")**"
                + (diff.widening > 0 ? ", ⚠️ **\(diff.widening) widening** (deny → allow)." : ", none widening."))
        lines += ["", "| change | resource | action | who | old | new | requests |", "|---|---|---|---|---|---|---|"]
        for change in diff.changes {
            let mark = change.isWidening ? "⚠️ widening" : change.to.effect == .deny && change.from.effect == .allow ? "narrowing" : "changed"
            let who = change.selector.isEmpty ? "every request" : change.selector.map { "\($0.axis) \($0.values.joined(separator: " or "))" }.joined(separator: ", ")
            lines.append(
                "| \(mark) | \(cell(change.resourceType)) | \(cell(change.action)) | \(cell(who)) | \(outcome(change.from)) | \(outcome(change.to)) | \(change.requests) of \(change.ofRequests) |")
        }
        lines += ["", "<details><summary>Summary and an example request per group</summary>", ""]
        for change in diff.changes {
            lines.append("- \(cell(change.summary)): \(change.from) → \(change.to)")
            lines.append("  `\(change.example.json.rendered(pretty: false).replacingOccurrences(of: "`", with: "'"))`")
        }
        lines += ["", "</details>"]
        lines += diff.diagnostics.map { "\n> **warning:** \(cell($0.message)) `[\($0.code)]`" }
        return lines.joined(separator: "\n")
    }

    public static func json(_ diff: DecisionDiff, old: String, new: String) -> JSONText {
        func outcome(_ o: Outcome) -> JSONText {
            .object([.init("decision", .string(o.effect.rawValue)), .init("reason", .string(o.reason.rawValue))])
        }
        return .object([
            .init("old", .string(old)), .init("new", .string(new)),
            .init("requests", .int(diff.requests)), .init("changed", .int(diff.changed)), .init("widening", .int(diff.widening)),
            .init("changes", .array(diff.changes.map { change in
                .object([
                    .init("resource", .string(change.resourceType)), .init("action", .string(change.action)),
                    .init("summary", .string(change.summary)),
                    .init("from", outcome(change.from)), .init("to", outcome(change.to)),
                    .init("widening", .bool(change.isWidening)),
                    .init("where", .object(change.selector.map { .init($0.axis, .array($0.values.map { .string($0) })) })),
                    .init("requests", .int(change.requests)), .init("ofRequests", .int(change.ofRequests)),
                    .init("example", change.example.json),
                ])
            })),
            .init("warnings", .array(diff.diagnostics.map(DiagnosticRenderer.json))),
        ])
    }
}
