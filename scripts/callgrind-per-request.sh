#!/usr/bin/env bash
# Instructions per HTTP request of `policy serve`, counted by callgrind (deterministic, unlike a rate on a
# shared machine): /healthz (the framework's floor), /v1/decide, /v1/decide with a bearer token, and
# /v1/decide/batch with 100 requests per body, each over one keep-alive connection on loopback.
#
#   scripts/callgrind-per-request.sh [REQUESTS]   (default 5000 per route; bearer gets REQUESTS/10, batch REQUESTS/100;
#                                                  below ~1000 the per-window overhead shows: healthz +5% at 300)
#   BIN=path/to/policy   a binary already built (default: .build-release/release/policy, built if missing)
#   TOP=25               how many functions to list that decide adds most to over healthz (0: none)
#   KEEP=DIR             keep the callgrind dumps there (callgrind_annotate reads them)
#   SERVE_ARGS="..."     more `policy serve` options (`--decision-log all`: what recording costs, its writer included)
#   DATABASE=...         the store (default: a fresh SQLite file), e.g. a postgres:// URL
#   ROUTE="METHOD PATH"  one more route, measured after the others with REQUESTS/10 requests and the operator credential
#                        (the server gets one for the run); USER in PATH is an anonymous user's id, e.g.
#                        ROUTE="POST /v1/operator/users/USER/pin-unlock" (a generated route, docs/architecture.md)
#   ROUTE_BODY='{...}'   the ROUTE's JSON body (USER in it too), e.g. ROUTE="PUT /v1/operator/users/USER/roles"
#                        ROUTE_BODY='{"roles":[]}'
#
# The server runs under valgrind with instrumentation off until it listens and one warm-up round per route
# is done; then, per route: zero the counters, send REQUESTS requests one after another (the client, a few
# lines of Python, is outside valgrind), dump. Everything the process did in that window is counted, every
# thread: the codec, Hummingbird, the route, the engine, and whatever ran meanwhile (the policy watcher's poll
# every 250 ms). An idle window of the same length as the decide window is dumped too, to show that share.
# valgrind 3.19 cannot read the DWARF 5 that swiftc emits, so the binary is profiled from a copy with the
# symbols but no debug info (as Benchmarks/scripts/callgrind-per-decision.py does), and with a sigsuspend shim.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-5000}"
TOP="${TOP:-25}"
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  BIN=.build-release/release/policy
  [ -x "$BIN" ] || swift build -c release --scratch-path .build-release --product policy >/dev/null
fi
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind"; exit 1; }
WORK="$(mktemp -d)"
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
objcopy --strip-debug "$BIN" "$WORK/policy"
# valgrind 3.19 writes into the signal mask sigsuspend is given; libdispatch's main thread passes one in read-only
# memory, and valgrind dies with SIGSEGV. A preloaded sigsuspend hands the kernel a writable copy instead.
cat > "$WORK/sigsuspend.c" <<'C_EOF'
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
C_EOF
cc -shared -fPIC -O2 -o "$WORK/sigsuspend.so" "$WORK/sigsuspend.c"

# The operator credential of this throwaway server, for ROUTE (a measurement value, not a secret anywhere).
OPERATOR_TOKEN=callgrind-operator-credential-0001
GATEHOUSE_OPERATOR_TOKEN="$OPERATOR_TOKEN" LD_PRELOAD="$WORK/sigsuspend.so" SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --instr-atstart=no --compress-strings=no --compress-pos=no \
  --callgrind-out-file="$WORK/cg.out" "$WORK/policy" serve --policies policies/research-crawler --trust-caller-subjects \
  --database "${DATABASE:-$WORK/identity.sqlite}" --host 127.0.0.1 --port 0 ${SERVE_ARGS:-} > "$WORK/out" 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 600); do grep -q '^listening on ' "$WORK/out" 2>/dev/null && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$WORK/out" | head -1)"
[ -n "$URL" ] || { echo "the server did not start"; tail -20 "$WORK/server.log"; exit 1; }
PORT="${URL##*:}"

# The client: N requests in a row on one connection, each answer read in full (Content-Length) before the next.
cat > "$WORK/client.py" <<'EOF'
import json, socket, sys
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
body = sys.argv[4].encode() if len(sys.argv) > 4 and sys.argv[4] else b""
token = sys.argv[5] if len(sys.argv) > 5 else ""
method = sys.argv[6] if len(sys.argv) > 6 else ("POST" if body else "GET")
head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
if body: head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
if token: head += f"Authorization: Bearer {token}\r\n"
request = (head + "\r\n").encode() + body
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf, statuses = b"", {}
for _ in range(count):
    s.sendall(request)
    while b"\r\n\r\n" not in buf: buf += s.recv(65536)
    header, buf = buf.split(b"\r\n\r\n", 1)
    length = next((int(l.split(b":")[1]) for l in header.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
    while len(buf) < length: buf += s.recv(65536)
    last, buf = buf[:length], buf[length:]
    status = int(header.split(b" ")[1]); statuses[status] = statuses.get(status, 0) + 1
print(json.dumps(statuses), last.decode()[:160])
EOF
ONE='{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}'
BATCH="{\"requests\":[$(for i in $(seq 1 100); do printf '%s' "$ONE"; if [ "$i" -lt 100 ]; then printf ','; fi; done)]}"
BEARER='{"action":"ai_suggestions","resource":{"type":"app"}}'
TOKEN="$(curl -s -X POST "$URL/v1/auth/anonymous" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
[ -n "$TOKEN" ] || { echo "no token from /v1/auth/anonymous"; exit 1; }
if [ -n "${ROUTE:-}" ]; then
  ROUTE_METHOD="${ROUTE%% *}"
  USER_ID="$(curl -s "$URL/v1/me" -H "Authorization: Bearer $TOKEN" | sed -n 's/.*"userId":"\([^"]*\)".*/\1/p')"
  [ -n "$USER_ID" ] || { echo "no user id from /v1/me"; exit 1; }
  ROUTE_PATH="$(echo "${ROUTE#* }" | sed "s/USER/$USER_ID/")"
  ROUTE_BODY="$(printf '%s' "${ROUTE_BODY:-}" | sed "s/USER/$USER_ID/g")"
fi

client() { python3 "$WORK/client.py" "$PORT" "$@"; }
dumps=0
dump() {  # $1 label: dumps the counters since the last zero; prints the dump's total instructions
  callgrind_control -d "$1" "$SERVER" >/dev/null
  dumps=$((dumps + 1))
  local file
  for _ in $(seq 1 100); do
    file="$(ls "$WORK"/cg.out.* 2>/dev/null | sort -t. -k3 -n | tail -1)"
    [ -n "$file" ] && grep -q '^totals:' "$file" && [ "$(ls "$WORK"/cg.out.* | wc -l)" -ge "$dumps" ] && break
    sleep 0.2
  done
  cp "$file" "$WORK/dump.$1"
  awk '/^totals:/ {print $2}' "$file"
}

callgrind_control -i on "$SERVER" >/dev/null
# Warm-up: every route once in a small round, so first-use costs (caches, lazy metadata) are out of the window.
client /healthz 200 >/dev/null
client /v1/decide 200 "$ONE" >/dev/null
client /v1/decide 200 "$BEARER" "$TOKEN" >/dev/null
client /v1/decide/batch 20 "$BATCH" >/dev/null
[ -z "${ROUTE:-}" ] || client "$ROUTE_PATH" 20 "$ROUTE_BODY" "$OPERATOR_TOKEN" "$ROUTE_METHOD" >/dev/null
# One dump to start from a known place.
callgrind_control -z "$SERVER" >/dev/null

echo "policy serve under callgrind ($BIN), $N requests per route on one connection, load average $(cut -d' ' -f1-3 /proc/loadavg)"
measure() {  # $1 label, $2 requests, then client arguments
  local label="$1" count="$2" answer total started elapsed
  shift 2
  callgrind_control -z "$SERVER" >/dev/null
  started=$(date +%s.%N)
  answer="$(client "$@")"
  elapsed=$(echo "$(date +%s.%N) - $started" | bc)
  total="$(dump "$label")"
  printf '%-8s %12.0f instructions per request   (%s requests, %s s; answers %s)\n' \
    "$label" "$(echo "$total / $count" | bc -l)" "$count" "$(printf '%.1f' "$elapsed")" "${answer%% *}"
  eval "PER_$label=$(echo "$total / $count" | bc -l)"
  eval "SECS_$label=$elapsed"
}
measure healthz "$N" /healthz "$N"
measure decide "$N" /v1/decide "$N" "$ONE"
TN=$((N / 10 > 0 ? N / 10 : 1))
measure bearer "$TN" /v1/decide "$TN" "$BEARER" "$TOKEN"
BN=$((N / 100 > 0 ? N / 100 : 1))
measure batch "$BN" /v1/decide/batch "$BN" "$BATCH"
if [ -n "${ROUTE:-}" ]; then
  measure route "$TN" "$ROUTE_PATH" "$TN" "$ROUTE_BODY" "$OPERATOR_TOKEN" "$ROUTE_METHOD"
  echo "route: $ROUTE (net of idle not taken)"
fi
callgrind_control -z "$SERVER" >/dev/null
sleep "$SECS_decide"
idle="$(dump idle)"
# Net: less what the idle process spends in the same time (the watcher's polls), at the idle window's rate.
awk -v h="$PER_healthz" -v d="$PER_decide" -v t="$PER_bearer" -v b="$PER_batch" -v i="$idle" -v n="$N" -v tn="$TN" -v bn="$BN" \
  -v sh="$SECS_healthz" -v sd="$SECS_decide" -v st="$SECS_bearer" -v sb="$SECS_batch" 'BEGIN {
  r = i / sd
  printf "idle: %.0f instructions in the %.1f s decide window (%.0f per second)\n", i, sd, r
  h -= r * sh / n; d -= r * sd / n; t -= r * st / tn; b -= r * sb / bn
  printf "net of idle, per request: healthz %.0f, decide %.0f, bearer %.0f, batch %.0f (%.0f per decision)\n", h, d, t, b, b / 100
  printf "decide - healthz: %.0f; healthz / decide: %.2fx; bearer / decide: %.1fx; batched decisions per healthz request: %.1fx\n",
    d - h, h / d, t / d, h * 100 / b }'

if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK"/dump.* "$KEEP"/ && echo "dumps kept in $KEEP"; fi
if [ "$TOP" -gt 0 ]; then
  # Self (exclusive) instructions per request of every function, decide against healthz: what decide adds.
  # (start_thread and clone are left out: callgrind charges them whatever a thread ran when the counters were zeroed.)
  selfcost() {  # $1 label, $2 requests: "per-request<TAB>function" lines
    callgrind_annotate --threshold=100 "$WORK/dump.$1" 2>/dev/null \
      | awk -v n="$2" '/^ *[0-9,]+ +\(/ {c=$1; gsub(",", "", c); sub(/^ *[0-9,]+ +\([^)]*\) +/, ""); sub(/\x27[0-9]+/, ""); s[$0] += c} END {for (f in s) printf "%.1f\t%s\n", s[f] / n, f}'
  }
  selfcost healthz "$N" > "$WORK/healthz.tsv"
  selfcost decide "$N" > "$WORK/decide.tsv"
  echo; echo "decide - healthz, self instructions per request, the $TOP functions that add most (decide, healthz, function):"
  awk -F'\t' 'NR == FNR {h[$2] = $1; next} {d = $1 - ($2 in h ? h[$2] : 0); printf "%9.0f %9.0f %9.0f  %s\n", d, $1, ($2 in h ? h[$2] : 0), $2}' \
    "$WORK/healthz.tsv" "$WORK/decide.tsv" | grep -v -e 'start_thread' -e 'clone.S' | sort -rn | head -n "$TOP" | swift demangle --simplified | cut -c1-220 || true
fi
