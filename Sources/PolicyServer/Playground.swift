import Foundation
import Hummingbird
import PolicyEngine
import PolicyModel
import Synchronization

/// `GET /playground`: the active policy's decision matrix with a live request editor, as one page.
///
/// The page is the HTML matrix (`MatrixHTML`) plus an editor: clicking a cell puts its request in the editor,
/// and every edit is sent to `POST /v1/explain` on the same origin, whose decision, message and trace (with
/// rule locations) appear beside it. Everything is inline, so it works with no network beyond this server.
/// The page is built once per policy version (the matrix enumerates the request space), not per request.
public final class Playground: Sendable {
    private let cache = Mutex<(hash: String, page: String)?>(nil)
    /// The decision matrix page (`PolicyChecks.matrixPage`) the editor is added to.
    private let matrixPage: @Sendable (CompiledPolicy, _ title: String) -> String

    public init(matrixPage: @escaping @Sendable (CompiledPolicy, _ title: String) -> String) {
        self.matrixPage = matrixPage
    }

    /// The page for `policy`, loaded at `loadedAt`: built when the version changes, then served from memory.
    public func page(for policy: CompiledPolicy, loadedAt: Date) -> String {
        let key = policy.contentHash + "|" + Timestamp.format(loadedAt)
        if let cached = cache.withLock({ $0 }), cached.hash == key { return cached.page }
        let page = Self.render(policy: policy, loadedAt: loadedAt, matrixPage: matrixPage)
        cache.withLock { $0 = (key, page) }
        return page
    }

    /// The matrix page with the editor panel and its script added.
    static func render(policy: CompiledPolicy, loadedAt: Date, matrixPage: (CompiledPolicy, String) -> String) -> String {
        var html = matrixPage(policy, "\(policy.name) (playground)")
        let version = """
            <section id="playground">
            <h2>Request editor</h2>
            <p id="policy-version">Policy <code>\(MarkupText.escape(policy.name, inAttribute: true))</code>, version
            <code id="policy-hash">\(MarkupText.escape(policy.contentHash, inAttribute: true))</code>, loaded at
            <time id="policy-loaded">\(MarkupText.escape(Timestamp.format(loadedAt), inAttribute: true))</time>.
            Click a cell to load its request; every edit is explained by <code>POST /v1/explain</code>.</p>
            <textarea id="editor" rows="16" cols="80" spellcheck="false" aria-label="request JSON"></textarea>
            <p id="result" aria-live="polite">No request yet.</p>
            <ol id="trace"></ol>
            </section>
            <style>
            \(style)
            </style>
            <script>
            \(script)
            </script>

            """
        if let end = html.range(of: "</body>", options: .backwards) {
            html.insert(contentsOf: version, at: end.lowerBound)
        }
        return html
    }

    /// The matrix page's cell panel is hidden here: the editor shows the cell's request and its live decision.
    static let style = """
        #panel { display: none !important; }
        #playground { padding: 8px 16px 200px; border-top: 1px solid #ccc; }
        #editor { width: min(100%, 760px); font: 13px/1.4 ui-monospace, monospace; }
        #result.allow { background: #d5e8f6; color: #00446e; padding: 4px 8px; }
        #result.deny { background: #fde2c4; color: #7a3300; padding: 4px 8px; }
        #result.problem { background: #eee; color: #1a1a1a; padding: 4px 8px; border-left: 4px solid #7a3300; }
        #trace li { font: 12px/1.4 ui-monospace, monospace; }
        #trace .where { color: #555; }
        """

    /// Fills the editor from a clicked cell and explains every edit (debounced) through `/v1/explain`.
    static let script = """
        (function () {
          var data = JSON.parse(document.getElementById('matrix-data').textContent);
          var editor = document.getElementById('editor');
          var result = document.getElementById('result');
          var trace = document.getElementById('trace');
          var timer = null, sequence = 0;
          function show(kind, text) { result.className = kind; result.textContent = text; }
          function explain() {
            var mine = ++sequence;
            fetch('/v1/explain', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: editor.value })
              .then(function (response) { return response.json().then(function (body) { return [response, body]; }); })
              .then(function (pair) {
                if (mine !== sequence) return;
                var response = pair[0], body = pair[1];
                trace.textContent = '';
                if (!response.ok) {
                  show('problem', (body.code || 'error') + ': ' + (body.detail || body.title || response.status) +
                    (body.field ? ' (field ' + body.field + ')' : '') + (body.offset !== undefined ? ' at byte ' + body.offset : ''));
                  return;
                }
                show(body.decision, body.decision + ' (' + body.reason + ')' + (body.message ? ': ' + body.message : '') +
                  (body.policy ? ' [' + body.policy + ']' : ''));
                (body.trace || []).forEach(function (step) {
                  var li = document.createElement('li');
                  li.textContent = step.outcome + ' ' + step.check + (step.detail ? ': ' + step.detail : '');
                  if (step.policy) {
                    var where = document.createElement('span');
                    where.className = 'where';
                    where.textContent = ' at ' + step.policy;
                    li.appendChild(where);
                  }
                  trace.appendChild(li);
                });
              })
              .catch(function (error) { if (mine === sequence) show('problem', 'could not reach the server: ' + error); });
          }
          editor.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(explain, 250); });
          document.querySelectorAll('td a[data-row]').forEach(function (a) {
            a.addEventListener('click', function () {
              var table = data.tables[+a.getAttribute('data-table')];
              var cell = table.cells[(+a.getAttribute('data-row')) * table.columns.length + (+a.getAttribute('data-column'))];
              editor.value = JSON.stringify(cell.request, null, 2);
              explain();
            });
          });
        })();
        """
}

extension GatehouseServer {
    /// The playground page of the version serving now.
    func playgroundPage() -> String {
        let active = service.active
        return playground.page(for: active.policy, loadedAt: active.version.loadedAt)
    }
}

func html(_ value: String) -> Response {
    Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: value)))
}
