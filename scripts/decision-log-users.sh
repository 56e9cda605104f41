#!/usr/bin/env bash
# Decision records with many users at once (issue 37): USERS anonymous users sign in, then wrk decides for them in
# turn (each request the next user's bearer) with --decision-log all, and the script prints the rate and what the
# recorder and the decision cache did (/metrics). A batch then holds hundreds of users: what a single-bearer run
# (scripts/decision-log-load.sh) cannot show, e.g. a lookup per user per batch, or cache invalidations.
#
#   scripts/decision-log-users.sh [USERS] [SECONDS]   (default 1000 users, 10 s; BIN=path/to/policy, DATABASE=...)
#
# Sign-ups are limited to 100 per source address an hour, so each 90 users sign in from their own loopback address
# (127.X.Y.Z, X random per run). Records dropped as queue_full mean the writer fell behind; cache invalidations with
# no other writer mean the commit probe took this process's own writes for another's.
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${1:-1000}"
SECS="${2:-10}"
BIN="${BIN:-.build-release/release/policy}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk"; exit 1; }
WORK="$(mktemp -d)"
SERVER=""
trap 'kill "$SERVER" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$BIN" serve --policies policies/research-crawler --database "${DATABASE:-$WORK/identity.sqlite}" --sign-in-limit 100000000/60 \
  --decision-log all --decision-log-limit 1000000000/60 --host 127.0.0.1 --port 0 > "$WORK/out" 2> "$WORK/log" &
SERVER=$!
for _ in $(seq 1 300); do grep -q '^listening on ' "$WORK/out" 2>/dev/null && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$WORK/out" | head -1)"
[ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/log"; exit 1; }
python3 - "$URL" "$USERS" > "$WORK/users.lua" <<'PY'
import http.client, json, random, sys, urllib.parse
url, n = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2])
octet = random.randint(1, 250)
tokens = []
for i in range(n):
    source = "127.%d.%d.%d" % (octet, i // 90 // 250, i // 90 % 250 + 2)
    c = http.client.HTTPConnection(url.hostname, url.port, source_address=(source, 0))
    c.request("POST", "/v1/auth/anonymous", body=b"", headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    if r.status not in (200, 201):
        sys.exit("sign-in %d answered %d: %s" % (i, r.status, body[:200]))
    tokens.append(json.loads(body)["accessToken"])
    c.close()
print("local tokens = {" + ",".join('"%s"' % t for t in tokens) + "}")
print("local i = 0")
print('request = function() i = i + 1; return wrk.format("POST", "/v1/decide", {["Content-Type"] = "application/json", '
      '["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1]}, \'{"action":"ai_suggestions","resource":{"type":"app"}}\') end')
PY
wrk -t1 -c16 -d"${SECS}s" -s "$WORK/users.lua" "$URL" | grep -E 'Requests/sec|requests in'
# The writer's backlog: wait until the counts stop moving.
counts() { curl -s "$URL/metrics" | awk '/^gatehouse_decision_log_(written|dropped)_total/ {n += $NF} END {print n + 0}'; }
last=-1; now="$(counts)"
while [ "$now" != "$last" ]; do sleep 0.5; last="$now"; now="$(counts)"; done
curl -s "$URL/metrics" | grep -E '^gatehouse_decision_log_(written|dropped)_total|^gatehouse_decision_cache_total' | grep -v ' 0$' || true
echo "users $USERS, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
