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
