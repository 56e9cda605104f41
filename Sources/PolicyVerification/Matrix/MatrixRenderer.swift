import PolicyModel

/// The output formats of `policy matrix`.
public enum MatrixFormat: String, Sendable, CaseIterable {
    /// Aligned columns for a terminal: row letters with a legend, deny cells by reason with numbered messages.
    case text
    /// GitHub-flavoured markdown tables, deny messages as footnotes.
    case markdown
    /// One self-contained page (inline CSS and script): colour and symbol per cell, sticky headers, filters.
    case html
    /// Every row, column and cell; each cell with the request it stands for and that request's decision.
    case json
}

/// Renders a `DecisionMatrix` in each `MatrixFormat`; `title` names the set (its folder).
public enum MatrixRenderer {
    public static func render(_ matrix: DecisionMatrix, title: String, as format: MatrixFormat) -> String {
        switch format {
        case .text: text(matrix, title: title)
        case .markdown: markdown(matrix, title: title)
        case .html: MatrixHTML.page(matrix, title: title)
        case .json: json(matrix, title: title).rendered(pretty: true)
        }
    }

    /// A cell's short form: `allow`, or the deny reason code.
    static func code(_ cell: DecisionMatrix.Cell) -> String {
        cell.decision.effect == .allow ? "allow" : cell.decision.reason.rawValue
    }

    /// "6 classes decide alike", or nil for a row that is one class.
    static func mergedNote(_ row: DecisionMatrix.Row) -> String? {
        row.merged > 1 ? "\(row.merged) classes decide alike" : nil
    }

    /// Numbers each distinct deny message (with its reason) in reading order, from `start`.
    struct Notes {
        private(set) var entries: [(reason: String, message: String)] = []
        private var numbers: [String: Int] = [:]
        let start: Int

        init(start: Int = 1) { self.start = start }

        /// The note number of a deny cell's message, nil for an allow or a deny without one.
        mutating func number(_ cell: DecisionMatrix.Cell) -> Int? {
            guard cell.decision.effect == .deny, let message = cell.decision.message else { return nil }
            let key = cell.decision.reason.rawValue + "\u{0}" + message
            if let n = numbers[key] { return n }
            let n = start + entries.count
            numbers[key] = n
            entries.append((cell.decision.reason.rawValue, message))
            return n
        }
    }

    static func heading(_ table: DecisionMatrix.Table) -> String {
        let classes = table.rows.reduce(0) { $0 + $1.merged }
        return "\(table.resourceType): \(table.rows.count) row\(table.rows.count == 1 ? "" : "s") from \(classes) class\(classes == 1 ? "" : "es")"
            + " x \(table.columns.count) column\(table.columns.count == 1 ? "" : "s") (\(table.requests) requests decided)"
    }

    public static func text(_ matrix: DecisionMatrix, title: String) -> String {
        var lines = ["\(title): decision matrix"]
        for table in matrix.tables {
            lines.append("")
            lines.append(heading(table))
            for row in table.rows {
                lines.append("  \(row.id) = \(visible(row.label))" + (mergedNote(row).map { "  [\($0)]" } ?? ""))
            }
            var notes = Notes()
            let cells = table.cells.map { row in
                row.map { cell in code(cell) + (notes.number(cell).map { " [\($0)]" } ?? "") }
            }
            let headers = table.columns.map { [$0.action, $0.situations.joined(separator: "; ")] }
            let firstWidth = table.rows.map(\.id.count).max() ?? 1
            let widths = table.columns.indices.map { c in
                max(headers[c].map(\.count).max() ?? 0, cells.map { $0[c].count }.max() ?? 0)
            }
            func line(_ first: String, _ texts: [String]) -> String {
                let padded = [pad(first, firstWidth)] + texts.indices.map { pad(texts[$0], widths[$0]) }
                return ("  " + padded.joined(separator: "  ")).trimmingTrailingSpaces()
            }
            lines.append("")
            lines.append(line("", headers.map { visible($0[0]) }))
            if headers.contains(where: { !$0[1].isEmpty }) { lines.append(line("", headers.map { visible($0[1]) })) }
            for (r, row) in table.rows.enumerated() { lines.append(line(row.id, cells[r])) }
            if !notes.entries.isEmpty {
                lines.append("")
                for (i, note) in notes.entries.enumerated() { lines.append("  [\(i + 1)] \(note.reason): \(visible(note.message))") }
            }
        }
        lines += matrix.diagnostics.map { "warning: \($0.message) [\($0.code)]" }
        return lines.joined(separator: "\n")
    }

    public static func markdown(_ matrix: DecisionMatrix, title: String) -> String {
        var lines = ["## Decision matrix: \(markdownCell(title))"]
        var notes = Notes()
        for table in matrix.tables {
            lines.append("")
            lines.append("### \(markdownCell(table.resourceType))")
            lines.append("")
            lines.append("_\(markdownCell(heading(table)))_")
            lines.append("")
            let headers = table.columns.map { column in
                "**\(markdownCell(column.action))**" + (column.situations.isEmpty ? "" : "<br>" + markdownCell(column.situations.joined(separator: "; ")))
            }
            lines.append("| subject class | " + headers.joined(separator: " | ") + " |")
            lines.append("|---|" + String(repeating: "---|", count: headers.count))
            for (r, row) in table.rows.enumerated() {
                let label = "**\(row.id)** " + markdownCell(row.classes.joined(separator: "; "))
                    + (mergedNote(row).map { "<br>_\($0)_" } ?? "")
                let cells = table.cells[r].map { cell in
                    cell.decision.effect == .allow
                        ? "✅ allow" : "⛔ \(code(cell))" + (notes.number(cell).map { "[^\($0)]" } ?? "")
                }
                lines.append("| \(label) | " + cells.joined(separator: " | ") + " |")
            }
        }
        if !notes.entries.isEmpty {
            lines.append("")
            for (i, note) in notes.entries.enumerated() {
                lines.append("[^\(i + 1)]: `\(note.reason)`: \(markdownCell(note.message))")
            }
        }
        if !matrix.diagnostics.isEmpty {
            lines.append("")
            lines += matrix.diagnostics.map { "> **warning:** \(markdownCell($0.message)) `[\($0.code)]`" }
        }
        return lines.joined(separator: "\n")
    }

    public static func json(_ matrix: DecisionMatrix, title: String) -> JSONText {
        .object([
            .init("policy", .string(title)),
            .init("tables", .array(matrix.tables.map(json))),
            .init("warnings", .array(matrix.diagnostics.map(DiagnosticRenderer.json))),
        ])
    }

    static func json(_ table: DecisionMatrix.Table) -> JSONText {
        .object([
            .init("resource", .string(table.resourceType)),
            .init("requests", .int(table.requests)),
            .init("subjectClasses", .array(table.subjectClasses.map { .string($0) })),
            .init("rows", .array(table.rows.map { row in
                .object([
                    .init("id", .string(row.id)), .init("label", .string(row.label)),
                    .init("classes", .array(row.classes.map { .string($0) })), .init("merged", .int(row.merged)),
                    .init("subjects", .array(row.subjects.map { .string($0) })),
                ])
            })),
            .init("columns", .array(table.columns.enumerated().map { index, column in
                .object([
                    .init("index", .int(index)), .init("action", .string(column.action)), .init("label", .string(column.label)),
                    .init("situations", .array(column.situations.map { .string($0) })),
                ])
            })),
            .init("cells", .array(table.rows.indices.flatMap { r in
                table.columns.indices.map { c in
                    let cell = table.cells[r][c]
                    return JSONText.object([
                        .init("row", .string(table.rows[r].id)), .init("column", .int(c)), .init("action", .string(table.columns[c].action)),
                        .init("requests", .int(cell.requests)),
                        .init("request", cell.request.json), .init("decision", cell.decision.json),
                    ])
                }
            })),
        ])
    }

    /// Text for a markdown table cell: pipes escaped, line breaks and markup characters kept inert.
    static func markdownCell(_ text: String) -> String {
        var out = ""
        for character in visible(text) {
            switch character {
            case "|": out += "\\|"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "*", "_", "`", "[", "]", "\\": out += "\\\(character)"
            default: out.append(character)
            }
        }
        return out
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
