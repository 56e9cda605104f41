/// The operator console's page, script and style sheet (issue 43): plain HTML, CSS and JavaScript compiled into the
/// binary, fetched from the same origin, no CDN and no build step. The page holds no data and no secret: the script
/// asks the operator routes for everything, with the operator credential the operator typed, kept in the tab's
/// `sessionStorage` and sent as a bearer (no cookie, so no CSRF surface). Every caller-supplied string (display names,
/// space names, usernames, diagnostics) is put on the page with `textContent`, never parsed as markup.
enum ConsoleAssets {
    static let index = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>Gatehouse console</title>
        <link rel="stylesheet" href="/console/console.css">
        <script src="/console/console.js" defer></script>
        </head>
        <body>
        <header>
          <h1>Gatehouse console</h1>
          <nav id="nav" hidden>
            <button type="button" id="nav-users">Users</button>
            <button type="button" id="nav-policy">Policy</button>
            <button type="button" id="sign-out">Sign out</button>
          </nav>
        </header>
        <p id="status" role="status" aria-live="polite"></p>
        <div id="confirm" hidden role="alertdialog" aria-labelledby="confirm-text">
          <p id="confirm-text"></p>
          <button type="button" id="confirm-yes">Confirm</button>
          <button type="button" id="confirm-no">Cancel</button>
        </div>
        <main>
          <section id="signin">
            <h2>Sign in</h2>
            <form id="signin-form" autocomplete="off">
              <label for="token">Operator credential</label>
              <input id="token" type="password" autocomplete="off" spellcheck="false" required>
              <button type="submit" id="sign-in">Sign in</button>
            </form>
            <p class="hint">The credential stays in this tab (session storage) and is sent only as a bearer to this server.</p>
          </section>
          <section id="users" hidden>
            <h2>Find a user</h2>
            <form id="find-form" autocomplete="off">
              <label for="q">Username, user id, pseudonym (p-… or a decision record's u-…), Apple subject or original transaction id</label>
              <input id="q" type="search" spellcheck="false" required>
              <button type="submit" id="find">Find</button>
            </form>
            <ul id="results"></ul>
            <article id="user" hidden>
              <h2 id="user-title"></h2>
              <dl id="user-facts" class="facts"></dl>
              <h3>Tier</h3>
              <p id="tier"></p>
              <div class="row">
                <label for="product">Record a subscription</label>
                <select id="product"></select>
                <button type="button" id="record-subscription">Record</button>
                <button type="button" id="end-subscription">End subscription</button>
              </div>
              <h3>App Store transactions</h3>
              <table id="transactions"><thead><tr><th>Original</th><th>Product</th><th>Environment</th><th>Signed</th><th>Expires</th><th>Revoked</th></tr></thead><tbody></tbody></table>
              <h3>App Store purchases and notifications</h3>
              <table id="store-events"><thead><tr><th>At</th><th>Event</th><th>Outcome</th><th>Detail</th></tr></thead><tbody></tbody></table>
              <h3>App roles</h3>
              <div id="roles"></div>
              <button type="button" id="save-roles">Save roles</button>
              <h3>Spaces</h3>
              <ul id="spaces"></ul>
              <h3>Sessions</h3>
              <table id="sessions"><thead><tr><th>Session</th><th>Device</th><th>Method</th><th>Last seen</th><th>State</th><th></th></tr></thead><tbody></tbody></table>
              <button type="button" id="signout-everywhere">Sign out everywhere</button>
              <h3>Credentials</h3>
              <ul id="credentials"></ul>
              <h3>Privacy</h3>
              <dl id="privacy" class="facts"></dl>
              <h3>Why was this denied?</h3>
              <form id="explain-form" autocomplete="off">
                <label for="explain-action">Action</label>
                <input id="explain-action" spellcheck="false" required>
                <label for="explain-type">Resource type</label>
                <input id="explain-type" spellcheck="false" value="app" required>
                <label for="explain-resource">Resource id</label>
                <input id="explain-resource" spellcheck="false">
                <button type="submit" id="explain">Explain now</button>
              </form>
              <p id="explain-result"></p>
              <ol id="explain-trace"></ol>
              <h3>Recent decisions</h3>
              <table id="decisions"><thead><tr><th>At</th><th>Action</th><th>Resource</th><th>Decision</th><th></th></tr></thead><tbody></tbody></table>
              <h3>Audit trail</h3>
              <table id="audit"><thead><tr><th>At</th><th>Event</th><th>Outcome</th><th>By</th><th>Detail</th></tr></thead><tbody></tbody></table>
            </article>
          </section>
          <section id="policy" hidden>
            <h2>Policy</h2>
            <dl id="policy-facts" class="facts"></dl>
            <h3>Last refused reload</h3>
            <pre id="policy-refused"></pre>
            <h3>Decisions by action and reason</h3>
            <p id="policy-decision-span"></p>
            <table id="policy-counts"><thead><tr><th>Action</th><th>Decision</th><th>Reason</th><th>Count</th></tr></thead><tbody></tbody></table>
            <h3>Shadow candidate</h3>
            <p id="policy-shadow"></p>
          </section>
        </main>
        </body>
        </html>

        """#

    static let style = #"""
        :root { color-scheme: light; --ink: #1a1a1a; --muted: #555; --line: #d0d0d0; --accent: #00446e; --deny: #7a3300; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fafafa; }
        header { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 8px; padding: 10px 16px; background: #fff; border-bottom: 1px solid var(--line); }
        h1 { font-size: 18px; margin: 0; }
        h2 { font-size: 17px; margin: 8px 0; }
        h3 { font-size: 15px; margin: 18px 0 6px; color: var(--accent); }
        h1, h2, h3, li, p { overflow-wrap: anywhere; }
        main { max-width: 1100px; margin: 0 auto; padding: 8px 16px 80px; }
        nav button, button { font: inherit; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; min-height: 36px; }
        button.danger { border-color: var(--deny); color: var(--deny); }
        input, select { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; min-height: 36px; max-width: 100%; }
        label { display: block; font-size: 13px; color: var(--muted); margin-top: 8px; }
        form, .row { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 8px; }
        form label, .row label { width: 100%; }
        label.inline { display: inline-flex; align-items: center; gap: 6px; margin: 4px 18px 8px 0; font-size: 15px; color: var(--ink); }
        label.inline input { width: 18px; height: 18px; }
        #status { margin: 0; padding: 6px 16px; min-height: 1.5em; color: var(--muted); }
        #status.error { color: var(--deny); }
        #confirm { position: sticky; top: 0; z-index: 2; margin: 0 16px; padding: 10px; background: #fff4e5; border: 1px solid var(--deny); border-radius: 6px; }
        #results { list-style: none; padding: 0; }
        #results li { margin: 4px 0; }
        #results button { width: 100%; text-align: left; }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
        .facts dt { color: var(--muted); }
        .facts dd { margin: 0; overflow-wrap: anywhere; }
        table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
        th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
        td.wrap { white-space: normal; overflow-wrap: anywhere; }
        .allow { color: var(--accent); font-weight: 600; }
        .deny { color: var(--deny); font-weight: 600; }
        #explain-trace li, pre { font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
        .hint { color: var(--muted); font-size: 13px; }
        @media (max-width: 600px) {
          body { font-size: 16px; }
          main { padding: 4px 10px 60px; }
          th, td { padding: 4px; }
          .facts { grid-template-columns: 1fr; }
          .facts dd { margin-bottom: 6px; }
        }

        """#

    static let script = #"""
        'use strict';
        (function () {
          var KEY = 'gatehouse.operator';
          var current = null;   // the user page shown: the answer of GET /v1/operator/users/{id}
          var policy = null;    // GET /v1/operator/policy
          var pending = null;   // the action a confirmation waits for

          function $(id) { return document.getElementById(id); }
          function credential() { return sessionStorage.getItem(KEY); }

          // An element whose children are elements or text: text becomes a text node, never markup.
          function el(tag, props, children) {
            var node = document.createElement(tag);
            Object.keys(props || {}).forEach(function (k) {
              if (k === 'text') node.textContent = props[k];
              else if (k === 'className') node.className = props[k];
              else if (k === 'onclick') node.addEventListener('click', props[k]);
              else node.setAttribute(k, props[k]);
            });
            (children || []).forEach(function (c) {
              node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
            });
            return node;
          }
          function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
          function status(text, error) { var s = $('status'); s.textContent = text || ''; s.className = error ? 'error' : ''; }
          function show(section) {
            ['signin', 'users', 'policy'].forEach(function (id) { $(id).hidden = id !== section; });
            $('nav').hidden = section === 'signin';
          }
          function facts(dl, pairs) {
            clear(dl);
            pairs.forEach(function (p) {
              if (p[1] === undefined || p[1] === null) return;
              dl.appendChild(el('dt', { text: p[0] }));
              dl.appendChild(el('dd', { text: String(p[1]) }));
            });
          }
          function row(tbody, cells) {
            var tr = el('tr');
            cells.forEach(function (c) { tr.appendChild(c instanceof Node ? el('td', {}, [c]) : el('td', { text: c === undefined || c === null ? '' : String(c) })); });
            tbody.appendChild(tr);
            return tr;
          }
          function when(t) { return t ? t.replace('T', ' ').replace('Z', ' UTC') : ''; }

          // Every call: same origin, the credential as a bearer, JSON both ways; a 401 signs the tab out.
          function call(method, path, body) {
            var headers = { 'Authorization': 'Bearer ' + credential(), 'Accept': 'application/json' };
            if (body !== undefined) headers['Content-Type'] = 'application/json';
            return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body),
                                 credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' })
              .then(function (response) {
                if (response.status === 204) return null;
                return response.json().catch(function () { return {}; }).then(function (data) {
                  if (response.status === 401) { signOut(); throw new Error('the operator credential was refused'); }
                  if (response.status === 429) {
                    // Throttled failed credentials: the right one is refused too until the window refills (docs/console.md).
                    throw new Error((data.detail || 'too many requests') + '; try again in ' + (response.headers.get('Retry-After') || 'a few') + ' seconds');
                  }
                  if (!response.ok) {
                    throw new Error((data.code || response.status) + ': ' + (data.detail || data.title || '') + (data.field ? ' (' + data.field + ')' : ''));
                  }
                  return data;
                });
              });
          }
          function failed(error) { status(String(error.message || error), true); }

          function confirmThen(text, action) {
            pending = action;
            $('confirm-text').textContent = text;
            $('confirm').hidden = false;
            $('confirm-yes').focus();
          }
          $('confirm-yes').addEventListener('click', function () {
            var action = pending; pending = null; $('confirm').hidden = true;
            if (action) action();
          });
          $('confirm-no').addEventListener('click', function () { pending = null; $('confirm').hidden = true; status('cancelled'); });

          function signOut() {
            sessionStorage.removeItem(KEY);
            current = null; policy = null;
            $('token').value = '';
            show('signin');
          }
          $('sign-out').addEventListener('click', function () { signOut(); status('signed out'); });

          $('signin-form').addEventListener('submit', function (event) {
            event.preventDefault();
            sessionStorage.setItem(KEY, $('token').value.trim());
            $('token').value = '';
            loadPolicy().then(function () { show('users'); status('signed in'); $('q').focus(); }).catch(failed);
          });

          $('nav-users').addEventListener('click', function () { show('users'); });
          $('nav-policy').addEventListener('click', function () { loadPolicy().then(function () { show('policy'); }).catch(failed); });

          // Users.
          $('find-form').addEventListener('submit', function (event) {
            event.preventDefault();
            var q = $('q').value.trim();
            call('GET', '/v1/operator/users?q=' + encodeURIComponent(q)).then(function (data) {
              var list = clear($('results'));
              data.users.forEach(function (u) {
                var label = (u.displayName || u.username || '(no name)') + ' · ' + (u.username ? '@' + u.username + ' · ' : '') + u.id + ' · matched by ' + u.matchedBy;
                list.appendChild(el('li', {}, [el('button', { type: 'button', 'data-user': u.id, text: label, onclick: function () { openUser(u.id); } })]));
              });
              status(data.users.length === 1 ? 'one user found' : data.users.length + ' users found');
              if (data.users.length === 1) openUser(data.users[0].id);
            }).catch(failed);
          });

          function openUser(id) {
            return call('GET', '/v1/operator/users/' + encodeURIComponent(id)).then(function (page) {
              current = page;
              renderUser(page);
              return call('GET', '/v1/operator/decisions?limit=20&user=' + encodeURIComponent(id)).then(renderDecisions).catch(function () {});
            }).catch(failed);
          }
          function reload(message) { return openUser(current.user.id).then(function () { status(message); }); }

          function renderUser(p) {
            $('user').hidden = false;
            var u = p.user;
            $('user-title').textContent = u.displayName || u.username || u.id;
            facts($('user-facts'), [['User id', u.id], ['Username', u.username], ['Display name', u.displayName], ['Email', u.email],
              ['Private relay', u.email ? (u.isPrivateRelayEmail ? 'yes' : 'no') : null], ['Pseudonym', u.pseudonym], ['Created', when(u.createdAt)]]);
            var t = p.tier;
            $('tier').textContent = (t.tier || 'default tier') + ' — source: ' + t.source + (t.productId ? ', product ' + t.productId : '') +
              (t.originalTransactionId ? ', original transaction ' + t.originalTransactionId : '') + (t.expiresAt ? ', expires ' + when(t.expiresAt) : '');
            $('tier').setAttribute('data-tier', t.tier || '');
            $('tier').setAttribute('data-source', t.source);
            var products = clear($('product'));
            Object.keys((policy && policy.products) || {}).forEach(function (id) { products.appendChild(el('option', { value: id, text: id + ' → ' + policy.products[id] })); });
            var tx = clear($('transactions').tBodies[0]);
            p.transactions.forEach(function (x) { row(tx, [x.originalTransactionId, x.productId, x.environment, when(x.signedAt), when(x.expiresAt), when(x.revokedAt)]); });
            var storeEvents = clear($('store-events').tBodies[0]);
            p.audit.filter(function (e) { return e.kind.indexOf('app_store') === 0; })
              .forEach(function (e) { row(storeEvents, [when(e.at), e.kind, e.outcome, e.reason]); });
            var roles = clear($('roles'));
            p.declaredRoles.forEach(function (r) {
              var box = el('input', { type: 'checkbox', id: 'role-' + r, 'data-role': r });
              box.checked = p.roles.indexOf(r) >= 0;
              roles.appendChild(el('label', { className: 'inline' }, [box, ' ' + r]));
            });
            if (!p.declaredRoles.length) roles.appendChild(el('p', { className: 'hint', text: 'The policy set declares no app roles.' }));
            var spaces = clear($('spaces'));
            p.spaces.forEach(function (s) {
              spaces.appendChild(el('li', { 'data-space': s.id }, [el('span', { className: 'space-name', text: s.name }),
                ' (' + s.type + ', ' + s.role + ', ' + s.members.length + ' members) ' + s.id]));
            });
            var sessions = clear($('sessions').tBodies[0]);
            p.sessions.forEach(function (s) {
              var end = s.live ? el('button', { type: 'button', className: 'danger', 'data-session': s.id, text: 'End this session',
                onclick: function () { confirmThen('End session ' + s.id + '? Its tokens stop working at once.', function () {
                  call('DELETE', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/sessions/' + encodeURIComponent(s.id))
                    .then(function () { return reload('session ended'); }).catch(failed);
                }); } }) : el('span', { text: '' });
              var tr = row(sessions, [s.id, s.device || 'unknown', s.method, when(s.lastSeenAt), s.live ? 'live' : (s.revokedReason ? 'ended (' + s.revokedReason + ')' : 'expired'), end]);
              tr.setAttribute('data-session-row', s.id);
            });
            var creds = clear($('credentials'));
            p.credentials.forEach(function (c) {
              creds.appendChild(el('li', { text: c.kind + (c.detail ? ' (' + c.detail + ')' : '') + (c.deviceId ? ' device ' + c.deviceId : '') +
                (c.appleSubject ? ' subject ' + c.appleSubject : '') + ' since ' + when(c.since) }));
            });
            if (!p.credentials.length) creds.appendChild(el('li', { className: 'hint', text: 'none (anonymous account)' }));
            facts($('privacy'), [['Analytics', p.privacy.analytics], ['Crash reporting', p.privacy.crashReporting], ['AI suggestions', p.privacy.aiSuggestions], ['Data sharing', p.privacy.dataSharing]]);
            var audit = clear($('audit').tBodies[0]);
            p.audit.forEach(function (e) { row(audit, [when(e.at), e.kind, e.outcome, e.method && e.method.indexOf('operator') === 0 ? e.method : 'user', e.reason]); });
          }

          function renderDecisions(data) {
            var body = clear($('decisions').tBodies[0]);
            (data.decisions || []).forEach(function (d) {
              var again = el('button', { type: 'button', 'data-decision': d.id, text: 'Explain again now', onclick: function () {
                call('POST', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/decisions/' + d.id + '/explain').then(showExplanation).catch(failed);
              } });
              row(body, [when(d.at), d.action, d.resourceType + (d.resourceId ? ' ' + d.resourceId : ''), d.effect + ' (' + d.reason + ')', again]);
            });
          }

          $('save-roles').addEventListener('click', function () {
            var chosen = Array.prototype.slice.call(document.querySelectorAll('#roles input[data-role]'))
              .filter(function (b) { return b.checked; }).map(function (b) { return b.getAttribute('data-role'); });
            confirmThen('Set the app roles to: ' + (chosen.join(', ') || 'none') + '?', function () {
              call('PUT', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/roles', { roles: chosen })
                .then(function () { return reload('roles saved'); }).catch(failed);
            });
          });
          $('record-subscription').addEventListener('click', function () {
            var product = $('product').value;
            if (!product) { status('the policy set maps no product ids to tiers', true); return; }
            confirmThen('Record a subscription to ' + product + '?', function () {
              call('PUT', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/subscription', { productId: product })
                .then(function () { return reload('subscription recorded'); }).catch(failed);
            });
          });
          $('end-subscription').addEventListener('click', function () {
            confirmThen('End this user\'s subscription? They fall back to the default tier.', function () {
              call('DELETE', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/subscription')
                .then(function () { return reload('subscription ended'); }).catch(failed);
            });
          });
          $('signout-everywhere').addEventListener('click', function () {
            confirmThen('Sign this user out on every device?', function () {
              call('POST', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/signout-everywhere')
                .then(function (data) { return reload('signed out everywhere (' + data.ended + ' sessions ended)'); }).catch(failed);
            });
          });

          $('explain-form').addEventListener('submit', function (event) {
            event.preventDefault();
            var resource = { type: $('explain-type').value.trim() };
            var id = $('explain-resource').value.trim();
            if (id) resource.id = id;
            call('POST', '/v1/operator/users/' + encodeURIComponent(current.user.id) + '/explain', { action: $('explain-action').value.trim(), resource: resource })
              .then(showExplanation).catch(failed);
          });
          function showExplanation(data) {
            var d = data.explanation;
            var result = $('explain-result');
            clear(result);
            result.className = d.decision;
            result.appendChild(el('span', { className: d.decision, text: d.decision + ' (' + d.reason + ')' }));
            result.appendChild(document.createTextNode((d.message ? ': ' + d.message : '') + (d.policy ? ' [' + d.policy + ']' : '') +
              (data.session ? ' — as session ' + data.session : ' — the user has no live session') + (data.recorded ? ' — recorded: ' + data.recorded.effect + ' (' + data.recorded.reason + ')' : '')));
            result.setAttribute('data-decision', d.decision);
            result.setAttribute('data-reason', d.reason);
            var trace = clear($('explain-trace'));
            (d.trace || []).forEach(function (step) {
              trace.appendChild(el('li', { text: step.outcome + ' ' + step.check + (step.detail ? ': ' + step.detail : '') + (step.policy ? ' at ' + step.policy : '') }));
            });
            status('explained by the policy serving now');
          }

          // Policy.
          function loadPolicy() {
            return call('GET', '/v1/operator/policy').then(function (p) {
              policy = p;
              facts($('policy-facts'), [['Policy set', p.active.name], ['Active version', p.active.hash], ['Loaded', when(p.active.loadedAt)],
                ['Files', p.active.files.length], ['Bundle revision', p.bundle ? p.bundle.revision : 'no bundle key'], ['Strict reload', p.strictReload],
                ['Decision log', p.decisionLog], ['App roles', (p.declaredRoles || []).join(', ') || 'none']]);
              $('policy-refused').textContent = p.lastRefused ? when(p.lastRefused.at) + '\n' + p.lastRefused.diagnostics.join('\n') : 'none since start';
              var dec = p.decisions;
              $('policy-decision-span').textContent = dec.records ? 'The newest ' + dec.records + ' decision records, ' + when(dec.from) + ' to ' + when(dec.to) + '.'
                : 'No decision records (see --decision-log).';
              var counts = clear($('policy-counts').tBodies[0]);
              dec.counts.forEach(function (c) { row(counts, [c.action, c.effect, c.reason, c.count]); });
              $('policy-shadow').textContent = p.shadow ? 'Candidate ' + (p.shadow.candidate || 'not compiling') + ' from ' + p.shadow.directory + ': ' +
                p.shadow.disagreements + ' disagreements in ' + p.shadow.decisions + ' decisions.' : 'No shadow candidate (--shadow DIR).';
              return p;
            });
          }

          if (credential()) {
            loadPolicy().then(function () { show('users'); }).catch(function (e) { failed(e); });
          } else {
            show('signin');
          }
        })();

        """#
}
