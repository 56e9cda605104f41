import Foundation
import PolicyModel

/// The matrix as one self-contained HTML page: no network, styles and script inline.
///
/// Allow cells are blue with a check mark, deny cells orange with a cross and the reason code (a pair that
/// stays apart for red-green colour blindness; the symbol carries the meaning without colour). Headers stay
/// in view while scrolling; selects filter by action and by subject class; a cell opens a panel with its
/// request JSON (and a `data:` link to it) and its decision. `policy serve` can embed `table(_:)` and `script`.
public enum MatrixHTML {
    /// The whole page.
    public static func page(_ matrix: DecisionMatrix, title: String) -> String {
        let actions = uniqueOrdered(matrix.tables.flatMap { $0.columns.map(\.action) })
        let subjects = uniqueOrdered(matrix.tables.flatMap(\.subjectClasses))
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Decision matrix: \(escape(title))</title>
            <style>
            \(style)
            </style>
            </head>
            <body>
            <header>
            <h1>Decision matrix: \(escape(title))</h1>
            <div class="filters">
            <label>Action <select id="filter-action"><option value="">all actions</option>
            """
        html += actions.map { "<option value=\"\(escape($0))\">\(escape($0))</option>" }.joined()
        html += """
            </select></label>
            <label>Subject class <select id="filter-subject"><option value="">all subject classes</option>
            """
        html += subjects.map { "<option value=\"\(escape($0))\">\(escape($0))</option>" }.joined()
        html += """
            </select></label>
            <span class="legend"><span class="allow">✓ allow</span> <span class="deny">✗ deny: reason (hover for the message)</span></span>
            </div>
            </header>
            <main>

            """
        html += matrix.tables.enumerated().map { table($1, index: $0) }.joined(separator: "\n")
        if !matrix.diagnostics.isEmpty {
            html += "<ul class=\"warnings\">"
            html += matrix.diagnostics.map { "<li>warning: \(escape($0.message)) [\(escape($0.code))]</li>" }.joined()
            html += "</ul>\n"
        }
        html += """
            </main>
            <aside id="panel" hidden>
            <button type="button" id="panel-close" aria-label="Close">×</button>
            <h2 id="panel-title"></h2>
            <p id="panel-decision"></p>
            <p><a id="panel-link" download="request.json">request JSON</a> (replay: <code>policy decide --policies DIR --request request.json</code>)</p>
            <pre id="panel-request"></pre>
            </aside>
            <script type="application/json" id="matrix-data">\(scriptSafe(MatrixRenderer.json(matrix, title: title).rendered(pretty: false)))</script>
            <script>
            \(script)
            </script>
            </body>
            </html>

            """
        return html
    }

    /// One resource type's table, its cells pointing into the page's `matrix-data` by table, row and column.
    public static func table(_ table: DecisionMatrix.Table, index: Int) -> String {
        var html = "<section class=\"matrix\" data-table=\"\(index)\">\n<h2>\(escape(table.resourceType))</h2>\n"
        html += "<p class=\"summary\">\(escape(MatrixRenderer.heading(table)))</p>\n"
        html += "<div class=\"scroll\"><table>\n<thead><tr><th class=\"corner\" scope=\"col\">subject class</th>"
        for column in table.columns {
            html += "<th scope=\"col\" data-action=\"\(escape(column.action))\">\(escape(column.action))"
            if !column.situations.isEmpty { html += "<small>\(escape(column.situations.joined(separator: "; ")))</small>" }
            html += "</th>"
        }
        html += "</tr></thead>\n<tbody>\n"
        for (r, row) in table.rows.enumerated() {
            let subjects = "|" + row.subjects.joined(separator: "|") + "|"
            html += "<tr data-subjects=\"\(escape(subjects))\"><th scope=\"row\"><b>\(escape(row.id))</b> "
            html += row.classes.map(escape).joined(separator: "<br>")
            if let note = MatrixRenderer.mergedNote(row) { html += "<small>\(escape(note))</small>" }
            html += "</th>"
            for (c, cell) in table.cells[r].enumerated() {
                let allow = cell.decision.effect == .allow
                let hover = cell.decision.message ?? "allowed"
                html += "<td class=\"\(allow ? "allow" : "deny")\" data-action=\"\(escape(table.columns[c].action))\">"
                html += "<a href=\"#\" data-table=\"\(index)\" data-row=\"\(r)\" data-column=\"\(c)\" title=\"\(escape(hover))\">"
                html += allow ? "✓ allow" : "✗ \(escape(cell.decision.reason.rawValue))"
                html += "</a></td>"
            }
            html += "</tr>\n"
        }
        html += "</tbody>\n</table></div>\n</section>\n"
        return html
    }

    /// Styles: Okabe-Ito blue and orange (distinct for every common colour-vision deficiency), sticky headers.
    public static let style = """
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1a1a1a; background: #fff; }
        header { padding: 8px 16px; border-bottom: 1px solid #ccc; background: #f7f7f7; }
        h1 { font-size: 18px; margin: 0 0 6px; }
        h2 { font-size: 16px; margin: 16px 0 4px; }
        main { padding: 0 16px 16px; }
        .filters { display: flex; gap: 16px; flex-wrap: wrap; align-items: center; }
        .summary { margin: 0 0 6px; color: #444; }
        .scroll { overflow: auto; max-height: 75vh; border: 1px solid #ccc; }
        table { border-collapse: separate; border-spacing: 0; }
        th, td { border-right: 1px solid #ddd; border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
        thead th { position: sticky; top: 0; z-index: 2; background: #eee; white-space: nowrap; }
        tbody th { position: sticky; left: 0; z-index: 1; background: #fafafa; font-weight: normal; min-width: 16em; max-width: 28em; }
        thead th.corner { left: 0; z-index: 3; }
        th small { display: block; color: #555; font-weight: normal; }
        thead th small { white-space: normal; max-width: 14em; }
        td { white-space: nowrap; }
        td a { color: inherit; text-decoration: none; display: block; }
        td a:focus, td a:hover { outline: 2px solid #000; }
        .allow { background: #d5e8f6; color: #00446e; }
        .deny { background: #fde2c4; color: #7a3300; }
        .legend span { padding: 2px 6px; margin-right: 6px; }
        td.selected { outline: 3px solid #000; outline-offset: -3px; }
        .hidden { display: none; }
        #panel { position: fixed; right: 12px; bottom: 12px; width: min(560px, 90vw); max-height: 70vh; overflow: auto;
          background: #fff; border: 1px solid #888; box-shadow: 0 2px 12px rgba(0,0,0,.25); padding: 8px 12px; z-index: 5; }
        #panel pre { background: #f4f4f4; padding: 8px; white-space: pre-wrap; word-break: break-all; }
        #panel-close { float: right; font-size: 18px; }
        .warnings { color: #7a3300; }
        """

    /// The filters and the cell panel; reads the matrix JSON from the `matrix-data` script element.
    public static let script = """
        (function () {
          var data = JSON.parse(document.getElementById('matrix-data').textContent);
          var actionFilter = document.getElementById('filter-action');
          var subjectFilter = document.getElementById('filter-subject');
          function applyFilters() {
            var action = actionFilter.value, subject = subjectFilter.value;
            document.querySelectorAll('[data-action]').forEach(function (el) {
              if (el.tagName === 'OPTION') return;
              el.classList.toggle('hidden', action !== '' && el.getAttribute('data-action') !== action);
            });
            document.querySelectorAll('tr[data-subjects]').forEach(function (tr) {
              tr.classList.toggle('hidden', subject !== '' && tr.getAttribute('data-subjects').indexOf('|' + subject + '|') < 0);
            });
          }
          actionFilter.addEventListener('change', applyFilters);
          subjectFilter.addEventListener('change', applyFilters);
          var panel = document.getElementById('panel');
          document.getElementById('panel-close').addEventListener('click', function () { panel.hidden = true; });
          document.querySelectorAll('td a[data-row]').forEach(function (a) {
            a.addEventListener('click', function (event) {
              event.preventDefault();
              var table = data.tables[+a.getAttribute('data-table')];
              var row = table.rows[+a.getAttribute('data-row')];
              var column = table.columns[+a.getAttribute('data-column')];
              var cell = table.cells[(+a.getAttribute('data-row')) * table.columns.length + (+a.getAttribute('data-column'))];
              document.querySelectorAll('td.selected').forEach(function (td) { td.classList.remove('selected'); });
              a.parentNode.classList.add('selected');
              document.getElementById('panel-title').textContent =
                table.resource + ' / ' + column.label + ' / row ' + row.id + ': ' + row.label;
              var d = cell.decision;
              document.getElementById('panel-decision').textContent =
                d.decision + ' (' + d.reason + ')' + (d.message ? ': ' + d.message : '') +
                ' - ' + cell.requests + ' request' + (cell.requests === 1 ? '' : 's') + ' decide alike';
              var json = JSON.stringify(cell.request, null, 2);
              document.getElementById('panel-request').textContent = json;
              document.getElementById('panel-link').href = 'data:application/json;charset=utf-8,' + encodeURIComponent(json);
              panel.hidden = false;
            });
          });
        })();
        """

    /// Text safe inside HTML content and double-quoted attribute values (`MarkupText`, as JUnit reports escape).
    public static func escape(_ text: String) -> String {
        MarkupText.escape(text, inAttribute: true)
    }

    /// JSON safe inside a `<script>` element: every `<` (only ever inside a JSON string) as `\u003c`, so no
    /// `</script>` can close the element and no `<!--` open a comment.
    static func scriptSafe(_ json: String) -> String {
        json.replacingOccurrences(of: "<", with: "\\u003c")
    }

    private static func uniqueOrdered(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }
}
