#!/usr/bin/env bash
# The cost of recording decisions (issue 37): /v1/decide rates with --decision-log off and all, for a caller-named
# subject and for a bearer, on one store; the ratios (target >= 0.8x) and what the recorder did (records written,
# dropped by reason) from /metrics. Records pass a quota of 10^9 per minute here, so none is dropped by it.
#
#   scripts/decision-log-load.sh [SECONDS_PER_RUN]   (default 10; BIN=path/to/policy to skip the release build)
#   DATABASE=postgres://...                          the store (default: a fresh SQLite file per run)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk"; exit 1; }
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  swift build -c release --product policy >/dev/null
  BIN="$(swift build -c release --show-bin-path)/policy"
fi
WORK="$(mktemp -d)"
SERVER=""
trap 'kill "$SERVER" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
ONE='{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}'
BEARER='{"action":"ai_suggestions","resource":{"type":"app"}}'
post_script() {  # $1 file, $2 body, $3 bearer (optional)
  local body="${2//\"/\\\"}"
  { echo 'wrk.method = "POST"'; echo "wrk.body = \"$body\""; echo 'wrk.headers["Content-Type"] = "application/json"'
    if [ -n "${3:-}" ]; then echo "wrk.headers[\"Authorization\"] = \"Bearer $3\""; fi; } > "$1"
}
rate() { wrk -t1 -c16 -d"${SECS}s" -s "$1" "$2/v1/decide" | awk '/^Requests\/sec:/ {print $2}'; }
for mode in off all; do
  db="${DATABASE:-$WORK/identity-$mode.sqlite}"
  "$BIN" serve --policies policies/research-crawler --database "$db" --trust-caller-subjects --sign-in-limit 1000000/60 \
    --decision-log "$mode" --decision-log-limit 1000000000/60 --host 127.0.0.1 --port 0 > "$WORK/$mode.out" 2> "$WORK/$mode.log" &
  SERVER=$!
  for _ in $(seq 1 300); do grep -q '^listening on ' "$WORK/$mode.out" 2>/dev/null && break; sleep 0.1; done
  URL="$(sed -n 's/^listening on //p' "$WORK/$mode.out" | head -1)"
  [ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/$mode.log"; exit 1; }
  TOKEN="$(curl -s -X POST "$URL/v1/auth/anonymous" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
  post_script "$WORK/caller.lua" "$ONE"
  post_script "$WORK/bearer.lua" "$BEARER" "$TOKEN"
  caller="$(rate "$WORK/caller.lua" "$URL")"
  bearer="$(rate "$WORK/bearer.lua" "$URL")"
  eval "CALLER_$mode=$caller; BEARER_$mode=$bearer"
  printf '%-4s caller-subject %10s req/s   bearer %10s req/s\n' "$mode" "$caller" "$bearer"
  if [ "$mode" = all ]; then
    curl -s "$URL/metrics" | grep -E '^gatehouse_decision_log_(written|dropped)_total' | grep -v ' 0$' || true
  fi
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
done
awk -v co="$CALLER_off" -v ca="$CALLER_all" -v bo="$BEARER_off" -v ba="$BEARER_all" 'BEGIN {
  printf "all / off: caller-subject %.2fx, bearer %.2fx (target >= 0.8x)\n", ca / co, ba / bo }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
