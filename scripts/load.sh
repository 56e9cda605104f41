#!/usr/bin/env bash
# Load figures for `policy serve` on loopback with wrk (Debian's package): request rates and p50/p99 of
# /healthz (the framework's floor), /v1/decide, /v1/decide/batch (100 requests per body) and /v1/decide
# with a bearer token; resident memory after 100,000 and after 1,000,000 decide requests.
#
#   scripts/load.sh [SECONDS_PER_RUN]     (default 10; CONFIG=debug for a debug build; SCRATCH=.build-release to
#                                          build in another folder than .build, e.g. beside a debug build)
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
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

export PATH=/opt/swift/usr/bin:$PATH
SCRATCH="${SCRATCH:-.build}"
if [ -z "${BIN:-}" ]; then  # BIN=path/to/policy runs a binary already built, as it is
  swift build -c "$CONFIG" --scratch-path "$SCRATCH" --product policy >/dev/null
  BIN="$(swift build -c "$CONFIG" --scratch-path "$SCRATCH" --show-bin-path)/policy"
fi
"$BIN" serve --policies policies/research-crawler --database "$WORK/identity.sqlite" --host 127.0.0.1 --port 0 \
  > "$WORK/out" 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$WORK/out" 2>/dev/null && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$WORK/out" | head -1)"
[ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/server.log"; exit 1; }

ONE='{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}'
BATCH="{\"requests\":[$(for i in $(seq 1 100); do printf '%s' "$ONE"; if [ "$i" -lt 100 ]; then printf ','; fi; done)]}"
TOKEN="$(curl -s -X POST "$URL/v1/auth/anonymous" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
BEARER='{"action":"ai_suggestions","resource":{"type":"app"}}'

post_script() {  # $1 file, $2 body, $3 extra header line (optional)
  local body="${2//\\/\\\\}"; body="${body//\"/\\\"}"
  { echo 'wrk.method = "POST"'; echo "wrk.body = \"$body\""; echo 'wrk.headers["Content-Type"] = "application/json"'
    if [ -n "${3:-}" ]; then echo "wrk.headers[\"Authorization\"] = \"Bearer $3\""; fi; } > "$1"
}
post_script "$WORK/decide.lua" "$ONE"
post_script "$WORK/batch.lua" "$BATCH"
post_script "$WORK/bearer.lua" "$BEARER" "$TOKEN"
echo 'wrk.method = "GET"' > "$WORK/get.lua"

run() {  # $1 name, $2 path, $3 lua
  wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$3" "$URL$2" > "$WORK/$1.txt"
  local rate p50 p99 non2xx
  rate="$(awk '/^Requests\/sec:/ {print $2}' "$WORK/$1.txt")"
  p50="$(awk '$1 == "50%" {print $2}' "$WORK/$1.txt")"
  p99="$(awk '$1 == "99%" {print $2}' "$WORK/$1.txt")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' "$WORK/$1.txt")"
  printf '%-14s %12s req/s   p50 %-9s p99 %-9s non-2xx %s\n' "$1" "$rate" "$p50" "$p99" "${non2xx:-0}"
  eval "RATE_$1=$rate"
}
echo "server: $URL ($CONFIG build), wrk -t$THREADS -c$CONNS, ${SECS}s per run, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run healthz /healthz "$WORK/get.lua"
run decide /v1/decide "$WORK/decide.lua"
run batch /v1/decide/batch "$WORK/batch.lua"
run bearer /v1/decide "$WORK/bearer.lua"
awk -v h="$RATE_healthz" -v d="$RATE_decide" -v b="$RATE_batch" -v t="$RATE_bearer" 'BEGIN {
  printf "decide / healthz: %.2fx   batched decisions/s / healthz req/s: %.1fx   bearer decide / healthz: %.2fx\n", d / h, b * 100 / h, t / h }'

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
