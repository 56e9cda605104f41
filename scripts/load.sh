#!/usr/bin/env bash
# Load figures for `policy serve` on loopback with wrk (Debian's package): request rates and p50/p99 of
# /healthz (the framework's floor), /v1/decide with a caller-named subject, /v1/decide/batch (100 requests per
# body), /v1/decide with a bearer token, and a batch of 100 with a bearer; the ratios issue 26 sets targets for
# (bearer against caller-subject decisions, a bearer batch's decisions against single bearer decisions); on
# PostgreSQL, the time from a sign-out on one replica to the refusal on another (100 trials); resident memory after
# 100,000 and after 1,000,000 decide requests.
#
#   scripts/load.sh [SECONDS_PER_RUN]     (default 10; CONFIG=debug for a debug build; SCRATCH=.build-release to
#                                          build in another folder than .build, e.g. beside a debug build)
#   DATABASE=postgres://...               the store (default: a fresh SQLite file); a PostgreSQL database gets a
#                                          second replica for the revocation trials
#   MEM_SECONDS=0                          skip the memory phase
#
# Bounded: each wrk run lasts SECONDS_PER_RUN; the memory phase stops at 1,000,000 requests or MEM_SECONDS
# (default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
CONFIG="${CONFIG:-release}"
THREADS="${THREADS:-1}"
CONNS="${CONNS:-16}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk"; exit 1; }
WORK="$(mktemp -d)"
SERVER=""
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

export PATH=/opt/swift/usr/bin:$PATH
SCRATCH="${SCRATCH:-.build}"
if [ -z "${BIN:-}" ]; then  # BIN=path/to/policy runs a binary already built, as it is
  swift build -c "$CONFIG" --scratch-path "$SCRATCH" --product policy >/dev/null
  BIN="$(swift build -c "$CONFIG" --scratch-path "$SCRATCH" --show-bin-path)/policy"
fi
DATABASE="${DATABASE:-$WORK/identity.sqlite}"
SERVER_B=""
trap 'kill "$SERVER" $SERVER_B 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_server() {  # $1 name: prints the URL once it listens; the pid goes to $WORK/$1.pid
  # Every wrk connection comes from 127.0.0.1: lift the per-client connection cap (64 by default) so CONNS may exceed it.
  "$BIN" serve --policies policies/research-crawler --database "$DATABASE" --trust-caller-subjects --sign-in-limit 1000000/60 --host 127.0.0.1 --port 0 \
    --max-connections-per-client 100000 > "$WORK/$1.out" 2> "$WORK/$1.log" &
  echo $! > "$WORK/$1.pid"
  for _ in $(seq 1 100); do grep -q '^listening on ' "$WORK/$1.out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^listening on //p' "$WORK/$1.out" | head -1
}
URL="$(start_server a)"
SERVER="$(cat "$WORK/a.pid")"
[ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/a.log"; exit 1; }

ONE='{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}'
BATCH="{\"requests\":[$(for i in $(seq 1 100); do printf '%s' "$ONE"; if [ "$i" -lt 100 ]; then printf ','; fi; done)]}"
TOKEN="$(curl -s -X POST "$URL/v1/auth/anonymous" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
BEARER='{"action":"ai_suggestions","resource":{"type":"app"}}'
BEARER_BATCH="{\"requests\":[$(for i in $(seq 1 100); do printf '%s' "$BEARER"; if [ "$i" -lt 100 ]; then printf ','; fi; done)]}"

post_script() {  # $1 file, $2 body, $3 extra header line (optional)
  local body="${2//\\/\\\\}"; body="${body//\"/\\\"}"
  { echo 'wrk.method = "POST"'; echo "wrk.body = \"$body\""; echo 'wrk.headers["Content-Type"] = "application/json"'
    if [ -n "${3:-}" ]; then echo "wrk.headers[\"Authorization\"] = \"Bearer $3\""; fi; } > "$1"
}
post_script "$WORK/decide.lua" "$ONE"
post_script "$WORK/batch.lua" "$BATCH"
post_script "$WORK/bearer.lua" "$BEARER" "$TOKEN"
post_script "$WORK/bearer-batch.lua" "$BEARER_BATCH" "$TOKEN"
echo 'wrk.method = "GET"' > "$WORK/get.lua"

run() {  # $1 name, $2 path, $3 lua
  wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$3" "$URL$2" > "$WORK/$1.txt"
  local rate p50 p99 non2xx
  rate="$(awk '/^Requests\/sec:/ {print $2}' "$WORK/$1.txt")"
  p50="$(awk '$1 == "50%" {print $2}' "$WORK/$1.txt")"
  p99="$(awk '$1 == "99%" {print $2}' "$WORK/$1.txt")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' "$WORK/$1.txt")"
  printf '%-14s %12s req/s   p50 %-9s p99 %-9s non-2xx %s\n' "$1" "$rate" "$p50" "$p99" "${non2xx:-0}"
  eval "RATE_${1//-/_}=$rate"
}
echo "server: $URL ($CONFIG build), wrk -t$THREADS -c$CONNS, ${SECS}s per run, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run healthz /healthz "$WORK/get.lua"
run decide /v1/decide "$WORK/decide.lua"
run batch /v1/decide/batch "$WORK/batch.lua"
run bearer /v1/decide "$WORK/bearer.lua"
run bearer-batch /v1/decide/batch "$WORK/bearer-batch.lua"
awk -v h="$RATE_healthz" -v d="$RATE_decide" -v b="$RATE_batch" -v t="$RATE_bearer" -v tb="$RATE_bearer_batch" 'BEGIN {
  printf "decide / healthz: %.2fx   batched decisions/s / healthz req/s: %.1fx   bearer decide / healthz: %.2fx\n", d / h, b * 100 / h, t / h
  printf "bearer / caller-subject decide: %.2fx (target >= 0.5x SQLite, >= 0.4x PostgreSQL)   bearer batch decisions/s / single bearer: %.1fx (target >= 10x)\n", t / d, tb * 100 / t }'

# Revocation across replicas (PostgreSQL): sign-out on A, then B asked until it refuses; 100 trials.
case "$DATABASE" in postgres://*|postgresql://*)
  URL_B="$(start_server b)"
  SERVER_B="$(cat "$WORK/b.pid")"
  [ -n "$URL_B" ] || { echo "the second replica did not start"; cat "$WORK/b.log"; exit 1; }
  python3 - "$URL" "$URL_B" <<'PY'
import json, sys, time, urllib.request
a, b = sys.argv[1], sys.argv[2]
def call(base, path, body=None, token=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else b"", method="POST")
    req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r: return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()
delays = []
# One PIN account signed in afresh for every trial (anonymous sign-ups from one address are limited).
credentials = {"username": "revocation_trials", "pin": "5820"}
call(a, "/v1/auth/pin/register", credentials)
for _ in range(100):
    token = json.loads(call(a, "/v1/auth/pin/signin", credentials)[1])["accessToken"]
    decide = {"action": "ai_suggestions", "resource": {"type": "app"}}
    for _ in range(2): call(b, "/v1/decide", decide, token)
    call(a, "/v1/auth/signout", None, token)
    done = time.monotonic()
    for _ in range(10000):
        if json.loads(call(b, "/v1/decide", decide, token)[1]).get("reason") == "unauthenticated": break
    delays.append((time.monotonic() - done) * 1000)
delays.sort()
print(f"sign-out on A to refusal on B, 100 trials: p50 {delays[49]:.1f} ms, p99 {delays[98]:.1f} ms, max {delays[99]:.1f} ms (target p99 <= 100 ms)")
PY
  ;;
esac
[ "${MEM_SECONDS:-300}" -gt 0 ] || exit 0

# Memory: decide requests until 100,000, read RSS; on to 1,000,000 (at most 300 s), read RSS again.
total=0; rss100k=""; started=$SECONDS
while [ "$total" -lt 1000000 ] && [ $((SECONDS - started)) -lt "${MEM_SECONDS:-300}" ]; do
  wrk -t"$THREADS" -c"$CONNS" -d5s -s "$WORK/decide.lua" "$URL/v1/decide" > "$WORK/mem.txt"
  total=$((total + $(awk '/requests in/ {print $1}' "$WORK/mem.txt")))
  if [ -z "$rss100k" ] && [ "$total" -ge 100000 ]; then
    rss100k="$(awk '/VmRSS/ {print $2}' /proc/$SERVER/status)"; at100k=$total
  fi
done
rss1m="$(awk '/VmRSS/ {print $2}' /proc/$SERVER/status)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$rss100k" ]; then  # MEM_SECONDS ran out before 100,000 requests: one reading only
  echo "RSS after $total requests: ${rss1m} kB (fewer than 100,000 requests in MEM_SECONDS: no comparison)"
  exit 0
fi
echo "RSS after $at100k requests: ${rss100k} kB; after $total requests: ${rss1m} kB ($(awk -v a="$rss100k" -v b="$rss1m" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}'))"
